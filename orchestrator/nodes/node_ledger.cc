#include "orchestrator/nodes/node_ledger.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>

#include "orchestrator/nodes/host_name.h"
#include "orchestrator/nodes/incident_file.h"
#include "orchestrator/reconcile/hold_release.h"
#include "orchestrator/store/store_nodes.h"
#include "schema/event_records.h"
#include "schema/run_folder.h"

namespace baton {

namespace {

// An attempt that ended as the run's own fault: nothing in it is held against a node.
bool OwnFault(const AttemptRecord& a) {
  return a.end_reason == Name(AttemptEndReason::kConfigError) ||
         a.end_reason == Name(AttemptEndReason::kDataError) ||
         a.end_reason == Name(AttemptEndReason::kDiverged);
}

const AttemptRecord* FindAttempt(const std::vector<AttemptRecord>& attempts, const std::string& job,
                                 int64_t restart, int64_t seq) {
  for (const AttemptRecord& a : attempts) {
    if (a.job_id == job && a.restart_count == restart && a.in_job_seq == seq) return &a;
  }
  return nullptr;
}

std::string TimeText(double t) {
  const std::time_t s = std::time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Status AddIncident(Store& store, const RunRecord& run, const std::string& host,
                   NodeIncidentRecord inc, double now, std::vector<std::string>* changes) {
  bool added = false;
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(inc.node_id,
                           EnsureNodeInTx(store, {run.cluster, run.partition, host}, now));
    BATON_ASSIGN_OR_RETURN(added, AddNodeIncidentInTx(store, inc));
    return Status::Ok();
  }));
  if (added && changes) {
    changes->push_back(
        "node " + host + ": incident " + inc.kind + " (run " + std::to_string(run.id) + ", job " +
        inc.job_id + "." + std::to_string(inc.restart_count) +
        (inc.rank >= 0 ? ", rank " + std::to_string(inc.rank) : "") + "): " + inc.evidence);
  }
  return Status::Ok();
}

// The run's incident files; refused ones are renamed *.refused so each is reported once.
Status RecordIncidentFiles(Store& store, const RunRecord& run,
                           const std::vector<AttemptRecord>& attempts, double now,
                           std::vector<std::string>* changes) {
  const NodeIncidentFiles files = ReadNodeIncidents(run.run_dir);
  for (const std::string& why : files.refused) {
    const std::string name = why.substr(0, why.find(':'));
    const std::string path = NodeIncidentDir(run.run_dir) + "/" + name;
    std::error_code ec;
    std::filesystem::rename(path, path + ".refused", ec);
    if (changes)
      changes->push_back("run " + std::to_string(run.id) + ": refused as evidence: " + why);
  }
  for (const NodeIncidentReport& r : files.incidents) {
    const AttemptRecord* a = FindAttempt(attempts, r.job_id, r.restart_count, r.in_job_seq);
    if (a != nullptr && OwnFault(*a)) continue;
    NodeIncidentRecord inc;
    inc.run_id = run.id;
    inc.job_id = r.job_id;
    inc.restart_count = r.restart_count;
    inc.in_job_seq = r.in_job_seq;
    inc.rank = r.rank;
    inc.kind = r.kind;
    inc.source = r.source;
    inc.evidence = r.evidence;
    inc.at = r.at;
    BATON_RETURN_IF_ERROR(AddIncident(store, run, r.host, inc, now, changes));
  }
  return Status::Ok();
}

// Node-fault lines new in each job's log since the last scan, once the job's newest attempt has
// ended (its lines are then all there, and its end reason says whether they count).
Status ScanJobLogs(Store& store, const RunRecord& run, const std::vector<AttemptRecord>& attempts,
                   const LogPatterns& patterns, double now, std::vector<std::string>* changes) {
  std::map<std::string, const AttemptRecord*> newest;  // by job id: the last attempt listed
  for (const AttemptRecord& a : attempts) newest[a.job_id] = &a;
  for (const auto& [job, a] : newest) {
    if (!a->ended_at) continue;
    const std::string path = RunFolder{run.run_dir}.LogFile(job);
    BATON_ASSIGN_OR_RETURN(const int64_t cursor, NodeLogCursor(store, path));
    BATON_ASSIGN_OR_RETURN(const LogTail tail, ReadLogTail(path, cursor));
    if (tail.next_offset == cursor) continue;
    if (!OwnFault(*a)) {
      for (const LogMatch& m : patterns.Scan(tail.text)) {
        // A line that names no host is the node's only when the attempt had one node.
        const std::string host = !m.host.empty()                              ? m.host
                                 : !m.host_refused && ValidHostName(a->nodes) ? a->nodes
                                                                              : "";
        if (host.empty()) continue;
        NodeIncidentRecord inc;
        inc.run_id = run.id;
        inc.job_id = a->job_id;
        inc.restart_count = a->restart_count;
        inc.in_job_seq = a->in_job_seq;
        inc.kind = m.kind;
        inc.source = "log";
        inc.evidence = m.line;
        inc.at = a->ended_at.value_or(now);
        BATON_RETURN_IF_ERROR(AddIncident(store, run, host, inc, now, changes));
      }
    }
    if (tail.skipped_bytes > 0 && changes) {
      changes->push_back("run " + std::to_string(run.id) + ": " + path + ": " +
                         std::to_string(tail.skipped_bytes) +
                         " new bytes before the last 1 MiB not scanned for node faults");
    }
    BATON_RETURN_IF_ERROR(
        store.Write([&]() { return SetNodeLogCursorInTx(store, path, tail.next_offset); }));
  }
  return Status::Ok();
}

// NODE_FAIL of a one-node attempt: SLURM itself names the node.
Status RecordNodeFailures(Store& store, const RunRecord& run,
                          const std::vector<AttemptRecord>& attempts, double now,
                          std::vector<std::string>* changes) {
  for (const AttemptRecord& a : attempts) {
    if (a.end_reason != Name(AttemptEndReason::kNodeFailure) || !ValidHostName(a.nodes)) continue;
    NodeIncidentRecord inc;
    inc.run_id = run.id;
    inc.job_id = a.job_id;
    inc.restart_count = a.restart_count;
    inc.in_job_seq = a.in_job_seq;
    inc.kind = "node_fail";
    inc.source = "slurm";
    inc.evidence = "SLURM ended the job NODE_FAIL" +
                   (a.slurm_reason.empty() ? "" : " (" + a.slurm_reason + ")");
    inc.at = a.ended_at.value_or(now);
    BATON_RETURN_IF_ERROR(AddIncident(store, run, a.nodes, inc, now, changes));
  }
  return Status::Ok();
}

}  // namespace

Result<NodeLedgerConfig> LoadNodeLedgerConfig(const std::string& path) {
  NodeLedgerConfig c;
  BATON_ASSIGN_OR_RETURN(c.policy, LoadNodePolicy(path));
  BATON_ASSIGN_OR_RETURN(c.patterns, LogPatterns::Compile(c.policy.patterns));
  return c;
}

Status RecordRunIncidents(Store& store, const RunRecord& run, const NodeLedgerConfig& config,
                          double now, std::vector<std::string>* changes) {
  if (run.run_dir.empty()) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
  BATON_RETURN_IF_ERROR(RecordIncidentFiles(store, run, attempts, now, changes));
  BATON_RETURN_IF_ERROR(RecordNodeFailures(store, run, attempts, now, changes));
  return ScanJobLogs(store, run, attempts, config.patterns, now, changes);
}

Status JudgeNodes(Store& store, const NodePolicy& policy, double now,
                  std::vector<std::string>* changes) {
  BATON_ASSIGN_OR_RETURN(const std::vector<NodeRecord> nodes, ListNodes(store));
  for (NodeRecord n : nodes) {
    BATON_ASSIGN_OR_RETURN(const std::vector<NodeIncidentRecord> incidents,
                           ListNodeIncidents(store, n.id, now - policy.window_s));
    std::vector<double> times;
    for (const NodeIncidentRecord& i : incidents) times.push_back(i.at);
    const NodeVerdict v = JudgeNode(n, times, now, policy);
    if (v.action == NodeVerdict::Action::kNone) continue;
    ApplyVerdict(v, now, policy, &n);
    const bool exclude = v.action == NodeVerdict::Action::kExclude;
    const std::string message =
        exclude ? "excluded until " + TimeText(v.until) + ": " + v.reason
                : "re-admitted on probation until " + TimeText(*n.probation_until);
    BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
      BATON_RETURN_IF_ERROR(UpdateNodeInTx(store, n));
      return AppendNodeActionInTx(store,
                                  {0, n.id, "baton", exclude ? "exclude" : "expire", now, message});
    }));
    if (changes) {
      changes->push_back("node " + n.key.host + " (" +
                         (n.key.partition.empty() ? "default partition" : n.key.partition) +
                         "): " + message);
    }
  }
  return Status::Ok();
}

Result<std::vector<std::string>> ExcludedHosts(Store& store, const std::string& cluster,
                                               const std::string& partition, double now) {
  BATON_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, ListNodes(store, cluster));
  std::vector<NodeRecord> excluded;
  for (NodeRecord& n : nodes) {
    if (n.key.cluster == cluster && n.key.partition == partition && ExcludedAt(n, now))
      excluded.push_back(std::move(n));
  }
  std::stable_sort(excluded.begin(), excluded.end(), [](const NodeRecord& a, const NodeRecord& b) {
    return a.excluded_at.value_or(0) > b.excluded_at.value_or(0);
  });
  std::vector<std::string> hosts;
  for (const NodeRecord& n : excluded) hosts.push_back(n.key.host);
  return hosts;
}

Result<ExclusionPlan> PlanJobExclusion(Store& store, SlurmClient& slurm, const std::string& cluster,
                                       const std::string& partition, int64_t nodes,
                                       const NodePolicy& policy, double now) {
  BATON_ASSIGN_OR_RETURN(const std::vector<std::string> hosts,
                         ExcludedHosts(store, cluster, partition, now));
  if (hosts.empty()) return ExclusionPlan{};
  BATON_ASSIGN_OR_RETURN(const std::vector<std::string> known, slurm.ListPartitionNodes(partition));
  return PlanExclusion(hosts, known, nodes, policy.max_excluded_fraction);
}

namespace {

int64_t JobNodeCount(const JobInfo& job) {
  auto it = job.fields.find("NumNodes");  // "2" or "2-2" while pending
  if (it == job.fields.end()) return 1;
  const int64_t n = std::atoll(it->second.c_str());
  return n > 0 ? n : 1;
}

// A node SLURM no longer lists: its exclusion ends with a note; it never blocks a requeue.
Status DropUnknown(Store& store, const RunRecord& run, const std::string& host,
                   const std::string& partition, double now, std::vector<std::string>* changes) {
  BATON_ASSIGN_OR_RETURN(std::vector<NodeRecord> rows, FindNodesByHost(store, host));
  for (NodeRecord& n : rows) {
    if (n.key.cluster != run.cluster || n.key.partition != run.partition) continue;
    n.excluded_at.reset();
    n.excluded_until.reset();
    const std::string message =
        "SLURM no longer lists it in partition " + partition + "; dropped from the exclusions";
    BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
      BATON_RETURN_IF_ERROR(UpdateNodeInTx(store, n));
      return AppendNodeActionInTx(store, {0, n.id, "baton", "drop", now, message});
    }));
    if (changes) changes->push_back("node " + host + ": " + message);
  }
  return Status::Ok();
}

}  // namespace

Status RecordExclusionRefusal(Store& store, const RunRecord& run, const std::string& job_id,
                              const ExclusionPlan::Refused& r, double now,
                              const NodeRefusalHook* on_refusal,
                              std::vector<std::string>* changes) {
  BATON_ASSIGN_OR_RETURN(const std::vector<NodeRecord> rows, FindNodesByHost(store, r.host));
  for (const NodeRecord& n : rows) {
    if (n.key.cluster != run.cluster || n.key.partition != run.partition) continue;
    BATON_ASSIGN_OR_RETURN(const std::vector<NodeActionRecord> actions,
                           ListNodeActions(store, n.id, 50));
    const std::string message = r.why + " (run " + std::to_string(run.id) + ", job " + job_id + ")";
    for (const NodeActionRecord& a : actions) {
      if (a.action == "refuse" && a.message == message) return Status::Ok();  // told already
    }
    BATON_RETURN_IF_ERROR(store.Write([&]() {
      return AppendNodeActionInTx(store, {0, n.id, "baton", "refuse", now, message});
    }));
    std::cerr << "baton: alert: node " << r.host << ": " << message << "\n";
    if (changes) changes->push_back("node " + r.host + ": " + message);
    if (on_refusal != nullptr && *on_refusal) {
      // The sinks are told through the alerts' outbox; a store problem there is not the pass's.
      const Status st = (*on_refusal)(store, run, job_id, r.host, message);
      if (!st.ok() && changes)
        changes->push_back("node " + r.host + ": alert not raised: " + st.ToString());
    }
  }
  return Status::Ok();
}

Status ApplyNodeExclusions(Store& store, SlurmClient& slurm, const RunRecord& run,
                           const JobInfo& job, const NodePolicy& policy, double now,
                           std::vector<std::string>* changes, const NodeRefusalHook* on_refusal) {
  if (!HeldAfterRequeue(job)) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const std::vector<std::string> hosts,
                         ExcludedHosts(store, run.cluster, run.partition, now));
  auto current_it = job.fields.find("ExcNodeList");
  const std::string current =
      current_it == job.fields.end() || current_it->second == "(null)" ? "" : current_it->second;
  if (hosts.empty()) return Status::Ok();  // a list set by hand stays as it is
  const std::string partition = job.partition.empty() ? run.partition : job.partition;
  BATON_ASSIGN_OR_RETURN(const std::vector<std::string> known, slurm.ListPartitionNodes(partition));
  const ExclusionPlan plan =
      PlanExclusion(hosts, known, JobNodeCount(job), policy.max_excluded_fraction);
  for (const std::string& host : plan.dropped) {
    BATON_RETURN_IF_ERROR(DropUnknown(store, run, host, partition, now, changes));
  }
  for (const ExclusionPlan::Refused& r : plan.refused) {
    BATON_RETURN_IF_ERROR(
        RecordExclusionRefusal(store, run, job.job_id, r, now, on_refusal, changes));
  }
  const std::string desired = JoinHostNames(plan.exclude);
  if (desired.empty() || desired == current) return Status::Ok();
  const Status st = slurm.SetExcludedNodes(job.job_id, desired);
  if (st.code() == Code::kUnavailable) return st;
  if (changes) {
    changes->push_back("run " + std::to_string(run.id) + ": job " + job.job_id +
                       (st.ok() ? ": ExcNodeList=" + desired + " before the requeue hold ends"
                                : ": SLURM refused ExcNodeList=" + desired + ": " + st.message()));
  }
  return Status::Ok();
}

Result<std::string> ExcludeForNewJob(Store* store, SlurmClient& slurm, const std::string& cluster,
                                     const std::string& partition, int64_t nodes, double now,
                                     std::vector<std::string>* warnings_out,
                                     std::vector<ExclusionPlan::Refused>* refused) {
  std::vector<std::string> ignored;
  std::vector<std::string>* warnings = warnings_out != nullptr ? warnings_out : &ignored;
  if (store == nullptr) return std::string();
  BATON_ASSIGN_OR_RETURN(const std::vector<std::string> hosts,
                         ExcludedHosts(*store, cluster, partition, now));
  if (hosts.empty()) return std::string();
  BATON_ASSIGN_OR_RETURN(const NodePolicy policy, LoadNodePolicy(NodePolicyPath()));
  Result<std::vector<std::string>> known = slurm.ListPartitionNodes(partition);
  if (!known.ok()) {
    warnings->push_back("excluded nodes not applied: " + known.status().message());
    return std::string();
  }
  const ExclusionPlan plan = PlanExclusion(hosts, *known, nodes, policy.max_excluded_fraction);
  for (const ExclusionPlan::Refused& r : plan.refused) {
    warnings->push_back("node " + r.host + ": " + r.why);
    if (refused != nullptr) {
      refused->push_back(r);  // the caller records and alerts it with the run's id
    } else {
      std::cerr << "baton: alert: node " << r.host << ": " << r.why << "\n";
    }
  }
  for (const std::string& h : plan.dropped) {
    warnings->push_back("node " + h + ": SLURM no longer lists it; not excluded");
  }
  return JoinHostNames(plan.exclude);
}

}  // namespace baton
