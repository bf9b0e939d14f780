// `baton watch [--interval S] [--once] [--json]`: ingest every active run's events and
// reconcile its job with SLURM, in a loop. One line per change; with --json one JSON object per
// pass. SLURM being down is a warning in the loop and exit 69 with --once.
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "orchestrator/alerts/alert_pass.h"
#include "orchestrator/alerts/node_refusal_alert.h"
#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/reconcile/job_permission.h"
#include "orchestrator/reconcile/sync_pass.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "schema/clock.h"
#include "schema/events.h"

namespace baton {

namespace {

struct WatchOptions {
  double interval_s = 5.0;
  bool once = false;
  bool json = false;
};

// Drops the "not yours" lines already in `shown` (each is said once per watch, not every pass).
std::vector<std::string> NewChanges(const std::vector<std::string>& changes,
                                    std::set<std::string>* shown) {
  std::vector<std::string> out;
  const std::string skipped = ": not yours";
  for (const std::string& c : changes) {
    const bool skip = c.size() >= skipped.size() &&
                      c.compare(c.size() - skipped.size(), skipped.size(), skipped) == 0;
    if (!skip || shown->insert(c).second) out.push_back(c);
  }
  return out;
}

// One pass. Returns the SLURM status (kUnavailable when down); store errors too.
Status WatchPass(Store& store, SlurmClient& slurm, const ActingUser& me,
                 const NodeLedgerConfig& nodes, const EvalJobOptions& evals, bool json,
                 std::set<std::string>* shown) {
  BATON_ASSIGN_OR_RETURN(const std::vector<RunRecord> runs, store.ListActiveRuns());
  SyncOptions options{&slurm, /*continue_after_ingest_error=*/false,
                      /*follow_up_ended_runs=*/true,
                      /*release_requeue_holds=*/true};
  options.acting_user = &me;
  options.nodes = &nodes;
  options.eval_jobs = &evals;
  BATON_ASSIGN_OR_RETURN(SyncReport pass, SyncRuns(store, runs, options, UnixTimeNow()));
  pass.changes = NewChanges(pass.changes, shown);
  const IngestStats& total = pass.ingested;
  PrintWarnings(total.warnings);
  if (!pass.eval_jobs.ok()) PrintWarnings({"eval jobs: " + pass.eval_jobs.ToString()});
  const Status& st = pass.reconcile;
  if (json) {
    std::cout << nlohmann::json{{"time", UnixTimeNow()},
                                {"active_runs", runs.size()},
                                {"records", total.records},
                                {"steps", total.steps},
                                {"bad_lines", total.bad_lines},
                                {"changes", pass.changes},
                                {"error",
                                 st.ok() ? nlohmann::json(nullptr) : nlohmann::json(st.ToString())}}
                     .dump()
              << std::endl;
  } else {
    for (const std::string& c : pass.changes) std::cout << c << "\n";
    std::cout << std::flush;  // a change (a released hold) is in the log when it happens
    if (total.records > 0) {
      std::cout << "ingested " << total.records << " records (" << total.steps << " steps) from "
                << runs.size() << " active runs" << std::endl;
    }
  }
  return st;
}

// Incidents after the pass (alert_pass.h); a problem is a warning, the next pass tries again.
void WatchAlerts(Store& store, const AlertsSection& lab) {
  Result<AlertPassReport> report = AlertPass(store, lab, UnixTimeNow());
  if (!report.ok()) {
    std::cerr << "baton: warning: alerts: " << report.status().ToString() << "\n";
    return;
  }
  for (const std::string& line : report->lines) std::cout << line << "\n";
  std::cout << std::flush;
}

void LogAlert(const std::string& line) { std::cerr << "baton: " << line << std::endl; }

int RunWatch(const WatchOptions& o) {
  Result<AlertsSection> lab = LoadLabAlertRules();
  if (!lab.ok()) return ReportError(lab.status());
  // The node policy first: a pattern that does not compile is a config error (78), named.
  Result<NodeLedgerConfig> nodes = LoadNodeLedgerConfig(NodePolicyPath());
  if (!nodes.ok()) return ReportError(nodes.status());
  nodes->on_refusal = CannotExcludeHook(*lab);  // the cap's refusals reach the alert sinks
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  // The outbox is sent from its own thread and connection: a dead receiver never slows a pass.
  AlertDelivery delivery(DefaultDbPath(), 1.0, LogAlert);
  if (!o.once) delivery.Start();
  RealSlurmClient slurm;
  // Whose jobs this watch may act on: its user's, or all of them for root and SLURM's operators.
  Result<std::map<std::string, std::string>> config = slurm.ShowConfig();
  const ActingUser me =
      CurrentActingUser(config.ok() ? *config : std::map<std::string, std::string>{});
  const EvalJobOptions evals = WatcherEvalJobs(me, *lab);
  std::set<std::string> shown;
  while (true) {
    Status st = WatchPass(**store, slurm, me, *nodes, evals, o.json, &shown);
    WatchAlerts(**store, *lab);
    if (o.once) {
      Result<int64_t> sent = DeliverDue(**store, UnixTimeNow(), 1000, LogAlert);
      if (!sent.ok()) std::cerr << "baton: warning: alerts: " << sent.status().ToString() << "\n";
      return st.ok() ? 0 : ReportError(st);
    }
    if (!st.ok()) std::cerr << "baton: warning: " << st.ToString() << "\n";
    std::this_thread::sleep_for(
        std::chrono::milliseconds(static_cast<int64_t>(o.interval_s * 1000)));
  }
}

}  // namespace

void AddWatchCommand(CLI::App& app, int* rc) {
  auto o = std::make_shared<WatchOptions>();
  CLI::App* cmd = app.add_subcommand("watch", "Ingest events and reconcile SLURM states in a loop");
  cmd->add_option("--interval", o->interval_s, "Seconds between passes (default 5)")
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_flag("--once", o->once, "One pass, then exit");
  cmd->add_flag("--json", o->json, "One JSON object per pass");
  cmd->callback([o, rc] { *rc = RunWatch(*o); });
}

}  // namespace baton
