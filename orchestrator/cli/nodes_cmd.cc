// `baton nodes [--json] [--no-sync]`: the node ledger, the report a user sends their admins —
// every node baton holds anything against, its incidents (run, job, rank, kind, evidence),
// whether and until when it is excluded, and who did what to it. Before it prints, the runs'
// incident files and job logs are brought into the ledger and every node is judged (no SLURM
// needed). `baton nodes exclude NODE --for 6h` and `baton nodes readmit NODE` are an admin's
// hand on it, audited. `baton preflight RUN_DIR` runs this node's checks (docs/nodes.md); exit
// 76 when one fails.
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/nodes/incident_file.h"
#include "orchestrator/nodes/manual_exclusion.h"
#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/nodes/node_report.h"
#include "orchestrator/nodes/preflight.h"
#include "orchestrator/reconcile/job_permission.h"
#include "schema/clock.h"
#include "schema/exit_codes.h"

namespace baton {

namespace {

struct NodesOptions {
  bool json = false;
  bool no_sync = false;
  std::string host, cluster, partition, for_text, reason;
  std::string run_dir, job;
  int64_t restart = 0, seq = 0;
};

// The runs' incidents into the ledger, and every node judged.
Status SyncLedger(Store& store, const NodeLedgerConfig& config, double now) {
  BATON_ASSIGN_OR_RETURN(const std::vector<RunRecord> runs, store.ListRuns(1 << 20));
  std::vector<std::string> changes;
  for (const RunRecord& run : runs) {
    BATON_RETURN_IF_ERROR(RecordRunIncidents(store, run, config, now, &changes));
  }
  BATON_RETURN_IF_ERROR(JudgeNodes(store, config.policy, now, &changes));
  for (const std::string& c : changes) std::cerr << "baton: " << c << "\n";
  return Status::Ok();
}

int RunNodesList(const NodesOptions& o) {
  Result<NodeLedgerConfig> config = LoadNodeLedgerConfig(NodePolicyPath());
  if (!config.ok()) return ReportError(config.status());
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  const double now = UnixTimeNow();
  if (!o.no_sync) {
    if (Status st = SyncLedger(**store, *config, now); !st.ok()) return ReportError(st);
  }
  Result<nlohmann::json> report = NodeReport(**store, now);
  if (!report.ok()) return ReportError(report.status());
  const nlohmann::json& all = *report;
  if (o.json) {
    std::cout << all.dump(2) << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const nlohmann::json& n : all) {
    const std::string until =
        n["excluded_until"].is_null()
            ? (n["probation_until"].is_null()
                   ? "-"
                   : "probation to " + FormatTime(n["probation_until"].get<double>()))
            : FormatTime(n["excluded_until"].get<double>());
    rows.push_back({n["host"],
                    n["cluster"].get<std::string>().empty() ? "-" : n["cluster"].get<std::string>(),
                    n["partition"].get<std::string>().empty() ? "(default)"
                                                              : n["partition"].get<std::string>(),
                    n["status"], until, std::to_string(n["incidents"].size())});
  }
  PrintTable(std::cout, {"NODE", "CLUSTER", "PARTITION", "STATUS", "UNTIL", "INCIDENTS"}, rows);
  for (const nlohmann::json& n : all) {
    for (const nlohmann::json& i : n["incidents"]) {
      std::cout << "  " << n["host"].get<std::string>() << "  " << FormatTime(i["at"].get<double>())
                << "  " << i["kind"].get<std::string>() << "  run " << i["run_id"] << " job "
                << i["job_id"].get<std::string>() << "." << i["restart_count"]
                << (i["rank"].get<int64_t>() >= 0
                        ? " rank " + std::to_string(i["rank"].get<int64_t>())
                        : "")
                << ": " << i["evidence"].get<std::string>() << "\n";
    }
  }
  return kExitOk;
}

ManualNodeAction ActionOf(const NodesOptions& o, const CLI::App& cmd) {
  ManualNodeAction a;
  a.host = o.host;
  a.cluster = o.cluster;
  a.partition = o.partition;
  a.match_any_cluster = cmd.count("--cluster") == 0;
  a.match_any_partition = cmd.count("--partition") == 0;
  a.user = CurrentActingUser().name;
  a.reason = o.reason;
  return a;
}

void PrintRows(const std::vector<NodeRecord>& rows, const std::string& what, double now) {
  for (const NodeRecord& n : rows) {
    std::cout << "node " << n.key.host << " ("
              << (n.key.partition.empty() ? "default partition" : n.key.partition)
              << (n.key.cluster.empty() ? "" : " of " + n.key.cluster) << ") " << what
              << (ExcludedAt(n, now) ? " until " + FormatTime(*n.excluded_until)
                                     : " (probation until " + FormatTime(*n.probation_until) + ")")
              << "\n";
  }
}

int RunExclude(const NodesOptions& o, const CLI::App& cmd) {
  Result<double> for_s = ParseDuration(o.for_text, "--for");
  if (!for_s.ok()) return ReportError(for_s.status());
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  ManualNodeAction a = ActionOf(o, cmd);
  a.for_s = *for_s;
  const double now = UnixTimeNow();
  Result<std::vector<NodeRecord>> rows = ExcludeNodeByHand(**store, a, now);
  if (!rows.ok()) return ReportError(rows.status());
  PrintRows(*rows, "excluded", now);
  return kExitOk;
}

int RunReadmit(const NodesOptions& o, const CLI::App& cmd) {
  Result<NodeLedgerConfig> config = LoadNodeLedgerConfig(NodePolicyPath());
  if (!config.ok()) return ReportError(config.status());
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  const double now = UnixTimeNow();
  Result<std::vector<NodeRecord>> rows =
      ReadmitNode(**store, ActionOf(o, cmd), config->policy, now);
  if (!rows.ok()) return ReportError(rows.status());
  PrintRows(*rows, "re-admitted", now);
  return kExitOk;
}

int RunPreflightCmd(const NodesOptions& o) {
  std::error_code ec;
  if (!std::filesystem::is_directory(o.run_dir, ec))
    return ReportError(Status::NotFound("no run folder '" + o.run_dir + "'"));
  const PreflightReport r = RunPreflight(o.run_dir);
  for (const PreflightCheck& c : r.checks) {
    std::cout << "baton preflight: " << r.node << ": " << c.name << ": " << c.result
              << (c.detail.empty() ? "" : " (" + c.detail + ")") << "\n";
  }
  if (r.ok()) return kExitOk;
  if (!o.job.empty()) {
    NodeIncidentReport inc{o.job,       o.restart,   o.seq,           -1,           r.node,
                           "preflight", "preflight", r.FailureText(), UnixTimeNow()};
    if (Status st = WriteNodeIncident(o.run_dir, inc); !st.ok())
      std::cerr << "baton: warning: the failure was not recorded: " << st.ToString() << "\n";
  }
  std::cerr << "baton: node " << r.node << " is unhealthy: " << r.FailureText() << "\n";
  return kExitNodeUnhealthy;
}

}  // namespace

void AddNodesCommands(CLI::App& app, int* rc) {
  auto o = std::make_shared<NodesOptions>();
  CLI::App* nodes = app.add_subcommand("nodes", "The node ledger: incidents and exclusions");
  nodes->require_subcommand(0, 1);
  nodes->add_flag("--json", o->json, "Print JSON");
  nodes->add_flag("--no-sync", o->no_sync, "Do not read the runs' incidents first");
  nodes->callback([o, rc, nodes] {
    if (nodes->get_subcommands().empty()) *rc = RunNodesList(*o);
  });
  CLI::App* exclude = nodes->add_subcommand("exclude", "Exclude a node for a while (audited)");
  exclude->add_option("node", o->host, "Node name")->required();
  exclude->add_option("--for", o->for_text, "How long: 90s, 15m, 6h, 2d")->required();
  exclude->add_option("--cluster", o->cluster, "Only this cluster ('' = unknown)");
  exclude->add_option("--partition", o->partition, "Only this partition ('' = the default)");
  exclude->add_option("--reason", o->reason, "Why, in words (kept in the audit)");
  exclude->callback([o, rc, exclude] { *rc = RunExclude(*o, *exclude); });
  CLI::App* readmit = nodes->add_subcommand("readmit", "End a node's exclusion (audited)");
  readmit->add_option("node", o->host, "Node name")->required();
  readmit->add_option("--cluster", o->cluster, "Only this cluster");
  readmit->add_option("--partition", o->partition, "Only this partition");
  readmit->callback([o, rc, readmit] { *rc = RunReadmit(*o, *readmit); });

  CLI::App* pre = app.add_subcommand("preflight", "Check this node before a trainer starts");
  pre->add_option("run_dir", o->run_dir, "Run folder")->required();
  pre->add_option("--job", o->job, "Record a failure as an incident of this job");
  pre->add_option("--restart", o->restart, "... and restart count");
  pre->add_option("--seq", o->seq, "... and in-job sequence");
  pre->callback([o, rc] { *rc = RunPreflightCmd(*o); });
}

}  // namespace baton
