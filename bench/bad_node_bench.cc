// How long a bad node eats a run before the node ledger keeps it out (bench/orchestrator_bench.sh
// prints the line). A simulated sequence through the real ledger, policy and store, with the fake
// SLURM client as the scheduler: a 10-node partition whose first node kills every job with
// SIGBUS, the default policy, and a scheduler that always offers that node first (the black
// hole: a node that fails fast is idle first). Each attempt that lands there ends crashed with
// srun's "Bus error" line in the job log and is requeued; baton's pass then records the incident,
// judges the node and, while the job is held, sets its ExcNodeList. The sequence ends with the
// first attempt on a good node.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/store/store.h"
#include "orchestrator/store/store_nodes.h"
#include "schema/run_folder.h"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int64_t incidents_before_exclusion = 0;  // recorded against the node when it was excluded
  int64_t attempts_lost = 0;               // attempts that ran on it
};

// The scheduler: the first node of the partition the job's ExcNodeList leaves.
std::string PlaceJob(baton::FakeSlurmClient& slurm, const std::string& job) {
  const std::string excluded = slurm.job(job)->fields["ExcNodeList"];
  for (const std::string& n : slurm.partition_nodes) {
    if (("," + excluded + ",").find("," + n + ",") == std::string::npos) return n;
  }
  return "";
}

baton::Status EndAttempt(baton::Store& store, const baton::RunRecord& run, const std::string& job,
                         int64_t restart, const std::string& node, double now) {
  return store.Write([&]() -> baton::Status {
    BATON_ASSIGN_OR_RETURN(const int64_t id, store.EnsureAttemptInTx(run.id, job, restart));
    BATON_ASSIGN_OR_RETURN(baton::AttemptRecord a, store.GetAttempt(id));
    a.nodes = node;
    a.ended_at = now;
    a.action = "requeue";
    a.end_reason = "crashed";
    return store.UpdateAttemptInTx(a);
  });
}

baton::Result<Outcome> Simulate(const fs::path& dir) {
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<baton::Store> store,
                         baton::Store::Open((dir / "baton.db").string()));
  baton::FakeSlurmClient slurm;
  slurm.partition_nodes.clear();
  for (int i = 1; i <= 10; ++i) slurm.partition_nodes.push_back("node-" + std::to_string(i));
  const std::string bad = slurm.partition_nodes.front();
  BATON_ASSIGN_OR_RETURN(const std::string job, slurm.Submit("/x/sbatch.sh"));
  int64_t id = 0;
  BATON_RETURN_IF_ERROR(store->Write([&]() -> baton::Status {
    baton::NewRun n;
    n.name = "bad-node";
    n.config = "run: {}";
    n.run_dir = (dir / "run").string();
    n.target_steps = 100;
    n.max_restarts = 100;
    n.max_failures = 100;
    BATON_ASSIGN_OR_RETURN(id, store->CreateRunInTx(n, 1.0));
    return store->SetRunJobInTx(id, job, 1.0);
  }));
  BATON_ASSIGN_OR_RETURN(const baton::RunRecord run, store->GetRun(id));
  fs::create_directories(dir / "run" / "logs");
  BATON_ASSIGN_OR_RETURN(const baton::NodeLedgerConfig config,
                         baton::LoadNodeLedgerConfig((dir / "no-such-nodes.yaml").string()));
  Outcome out;
  double now = 1.9e9;
  for (int64_t restart = 0; restart < 50; ++restart, now += 600) {
    const std::string node = PlaceJob(slurm, job);
    if (node != bad) return out;  // the run goes on elsewhere
    ++out.attempts_lost;
    std::ofstream(baton::RunFolder{run.run_dir}.LogFile(job), std::ios::app)
        << "step " << restart << "\nsrun: error: " << bad << ": task 0: Bus error\n";
    BATON_RETURN_IF_ERROR(EndAttempt(*store, run, job, restart, node, now));
    slurm.SetState(job, "PENDING", "BeginTime");  // requeued, held
    slurm.job(job)->restarts = restart + 1;
    // baton's pass: the ledger, then the exclusions before the hold ends.
    BATON_RETURN_IF_ERROR(baton::RecordRunIncidents(*store, run, config, now, nullptr));
    BATON_RETURN_IF_ERROR(baton::JudgeNodes(*store, config.policy, now, nullptr));
    BATON_ASSIGN_OR_RETURN(const std::optional<baton::JobInfo> held, slurm.GetJob(job));
    BATON_RETURN_IF_ERROR(
        baton::ApplyNodeExclusions(*store, slurm, run, *held, config.policy, now, nullptr));
    BATON_ASSIGN_OR_RETURN(const std::vector<baton::NodeRecord> rows,
                           baton::FindNodesByHost(*store, bad));
    if (out.incidents_before_exclusion == 0 && !rows.empty() && baton::ExcludedAt(rows[0], now)) {
      BATON_ASSIGN_OR_RETURN(const std::vector<baton::NodeIncidentRecord> incidents,
                             baton::ListNodeIncidents(*store, rows[0].id));
      out.incidents_before_exclusion = static_cast<int64_t>(incidents.size());
    }
  }
  return baton::Status::Internal("the bad node was never excluded in 50 attempts");
}

}  // namespace

int main() {
  const fs::path dir = fs::temp_directory_path() / ("baton-bad-node-" + std::to_string(getpid()));
  fs::create_directories(dir);
  baton::Result<Outcome> r = Simulate(dir);
  fs::remove_all(dir);
  if (!r.ok()) {
    std::fprintf(stderr, "bad node bench: %s\n", r.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "bad node: incidents before exclusion %lld, attempts lost to it %lld (10-node partition, "
      "default policy, the scheduler offering the bad node first)\n",
      static_cast<long long>(r->incidents_before_exclusion),
      static_cast<long long>(r->attempts_lost));
  return 0;
}
