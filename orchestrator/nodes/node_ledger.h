// The node ledger's pass: from what runs left behind to incidents in the store, to exclusions,
// to the ExcNodeList of a job waiting after its requeue (docs/nodes.md).
//
// Part of the sync pass of `baton watch` and `baton serve` (sync_pass.h), and of `baton nodes`:
//   1. RecordRunIncidents: a run's incident files (incident_file.h: hangs, signals, preflight
//      failures the launcher attributed) and the node-fault lines new in its job logs
//      (log_patterns.h) become node_incidents rows on the run's cluster and partition. Nothing
//      from an attempt that ended as the run's own fault (config_error, data_error, diverged)
//      is held against a node, and a line that names no host counts only when the attempt ran
//      on one node.
//   2. JudgeNodes: every node's incidents against the policy (node_policy.h): exclusions begin
//      and end, each one audited in node_actions.
//   3. ApplyNodeExclusions: for a job held after a requeue (called before the hold is released),
//      `scontrol update JobId=J ExcNodeList=...` with the partition's excluded nodes, capped;
//      what the cap refuses is recorded once per job, printed as "baton: alert: ..." and handed
//      to the refusal hook (watch, serve and submit raise a `cannot_exclude` incident with it).
// Stateless; thread-compatible (one Store per thread).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "orchestrator/nodes/log_patterns.h"
#include "orchestrator/nodes/node_policy.h"
#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/records.h"
#include "orchestrator/store/store.h"

namespace baton {

// Told of a refusal past the cap when it is first recorded (once per job): the run, the job, the
// host and the message ("cannot exclude: ... (run N, job J)"). The alerts unit raises it as an
// incident (orchestrator/alerts/node_refusal_alert.h); an error is a change line, never a failed
// pass.
using NodeRefusalHook =
    std::function<Status(Store& store, const RunRecord& run, const std::string& job_id,
                         const std::string& host, const std::string& message)>;

// The policy and its compiled patterns, loaded once per process, and the refusal hook.
struct NodeLedgerConfig {
  NodePolicy policy;
  LogPatterns patterns;
  NodeRefusalHook on_refusal;  // empty: refusals are recorded and logged only
};
// kConfig (78) naming the file and the pattern when the policy is bad.
[[nodiscard]] Result<NodeLedgerConfig> LoadNodeLedgerConfig(const std::string& path);

[[nodiscard]] Status RecordRunIncidents(Store& store, const RunRecord& run,
                                        const NodeLedgerConfig& config, double now,
                                        std::vector<std::string>* changes);

[[nodiscard]] Status JudgeNodes(Store& store, const NodePolicy& policy, double now,
                                std::vector<std::string>* changes);

// The hosts excluded now on `cluster` / `partition`, newest exclusion first.
[[nodiscard]] Result<std::vector<std::string>> ExcludedHosts(Store& store,
                                                             const std::string& cluster,
                                                             const std::string& partition,
                                                             double now);

// The `--exclude` of a new job of `nodes` nodes on the run's cluster and partition ("" for
// none): the excluded hosts SLURM still lists there, capped. Refusals are returned as notes.
[[nodiscard]] Result<ExclusionPlan> PlanJobExclusion(Store& store, SlurmClient& slurm,
                                                     const std::string& cluster,
                                                     const std::string& partition, int64_t nodes,
                                                     const NodePolicy& policy, double now);

// `baton submit` / `baton resume`: the --exclude of the new job ("" for none; always "" without a
// store or excluded nodes, so SLURM is not asked). The policy is NodePolicyPath()'s (a bad one is
// kConfig, 78); a partition SLURM cannot list is a warning, and what the cap refuses is a warning
// and an alert line.
[[nodiscard]] Result<std::string> ExcludeForNewJob(
    Store* store, SlurmClient& slurm, const std::string& cluster, const std::string& partition,
    int64_t nodes, double now, std::vector<std::string>* warnings,
    std::vector<ExclusionPlan::Refused>* refused = nullptr);

// Records that the cap refused `r.host` for job `job_id` of `run` (a `refuse` action on the
// node's row of the run's cluster and partition), once per job and host; when it is new, prints
// the alert line, adds a change line and calls `on_refusal` (may be null or empty).
[[nodiscard]] Status RecordExclusionRefusal(Store& store, const RunRecord& run,
                                            const std::string& job_id,
                                            const ExclusionPlan::Refused& r, double now,
                                            const NodeRefusalHook* on_refusal,
                                            std::vector<std::string>* changes);

[[nodiscard]] Status ApplyNodeExclusions(Store& store, SlurmClient& slurm, const RunRecord& run,
                                         const JobInfo& job, const NodePolicy& policy, double now,
                                         std::vector<std::string>* changes,
                                         const NodeRefusalHook* on_refusal = nullptr);

}  // namespace baton
