// How many SLURM command runs one sync pass makes for N live jobs, through the fake SLURM
// client's batch interface (bench/orchestrator_bench.sh prints the figures). Every run has its
// own job, half of them plain jobs and half tasks of one array, all RUNNING with an attempt.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "orchestrator/reconcile/sync_pass.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/store/store.h"

namespace fs = std::filesystem;

namespace {

baton::Result<int> CallsForOnePass(const fs::path& dir, int live) {
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<baton::Store> store,
                         baton::Store::Open((dir / "baton.db").string()));
  baton::FakeSlurmClient slurm;
  const int tasks = live / 2;
  const std::string array =
      tasks > 0 ? slurm.SubmitArray("/x/sbatch.sh", "0-" + std::to_string(tasks - 1)).value() : "";
  std::vector<baton::RunRecord> runs;
  for (int i = 0; i < live; ++i) {
    const std::string job =
        i < tasks ? array + "_" + std::to_string(i) : slurm.Submit("/x/sbatch.sh").value();
    const fs::path run_dir = dir / ("r" + std::to_string(i));
    int64_t id = 0;
    BATON_RETURN_IF_ERROR(store->Write([&]() -> baton::Status {
      baton::NewRun n;
      n.name = "r" + std::to_string(i);
      n.config = "run: {}";
      n.run_dir = run_dir.string();
      n.target_steps = 100;
      n.max_restarts = 100;
      n.max_failures = 3;
      BATON_ASSIGN_OR_RETURN(id, store->CreateRunInTx(n, 1.0));
      return store->SetRunJobInTx(id, job, 1.0);
    }));
    fs::create_directories(run_dir / "events");
    std::ofstream(run_dir / "events" / (job + ".0.jsonl"))
        << "{\"type\":\"attempt_start\",\"time\":1,\"source\":\"launcher\",\"job_id\":\"" << job
        << "\",\"restart_count\":0,\"nodes\":\"n1\",\"checkpoint\":null,\"mode\":\"fresh\","
           "\"step0\":0,\"resume_warmup_steps\":0}\n";
    slurm.SetState(job, "RUNNING");
    BATON_ASSIGN_OR_RETURN(baton::RunRecord run, store->GetRun(id));
    runs.push_back(std::move(run));
  }
  baton::SyncOptions options{&slurm};
  options.follow_up_ended_runs = true;
  options.release_requeue_holds = true;
  const int before = slurm.job_queries;
  BATON_ASSIGN_OR_RETURN(const baton::SyncReport report,
                         baton::SyncRuns(*store, runs, options, 100.0));
  BATON_RETURN_IF_ERROR(report.reconcile);
  for (const baton::RunRecord& run : report.runs) {
    if (run.status != baton::RunStatus::kRunning)
      return baton::Status::Internal("run " + run.name + " is not RUNNING after the pass");
  }
  return slurm.job_queries - before;
}

}  // namespace

int main() {
  const fs::path root =
      fs::temp_directory_path() / ("baton-sync-calls-" + std::to_string(getpid()));
  std::vector<std::string> parts;
  const int sizes[] = {1, 32, 256};
  for (int k = 0; k < 3; ++k) {
    const fs::path dir = root / std::to_string(sizes[k]);
    fs::create_directories(dir);
    baton::Result<int> calls = CallsForOnePass(dir, sizes[k]);
    if (!calls.ok()) {
      std::fprintf(stderr, "sync calls bench: %s\n", calls.status().ToString().c_str());
      fs::remove_all(root);
      return 1;
    }
    parts.push_back(std::to_string(*calls) + " (" + std::to_string(sizes[k]) +
                    (sizes[k] == 1 ? " live job)" : ")"));
  }
  fs::remove_all(root);
  std::printf("SLURM calls per sync pass: %s, %s, %s\n", parts[0].c_str(), parts[1].c_str(),
              parts[2].c_str());
  return 0;
}
