// The node policy: when incidents exclude a node, for how long, and how many nodes may be
// excluded at once (docs/nodes.md). The whole rule is here, as pure functions over plain values:
//
//   - an incident counts when it was seen within window_s and after the node's last
//     re-admission;
//   - a node is excluded (for ttl_s) when it has >= min_incidents counted incidents, or >= 1
//     while it is on probation;
//   - an exclusion that reaches its end re-admits the node on probation for probation_s;
//   - the exclusions applied to one job never exceed floor(max_excluded_fraction x the
//     partition's nodes), and never leave fewer nodes than the job needs; past either bound the
//     rest are not excluded and reported ("cannot exclude: ..."). Nodes SLURM no longer knows are
//     dropped with a note.
//
// The policy file is $BATON_HOME/nodes.yaml (every key optional):
//   exclude_after_incidents: 2     window: 24h     ttl: 24h     probation: 24h
//   max_excluded_fraction: 0.1     default_patterns: true
//   patterns: [{kind: xid, regex: '...'}]
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/nodes/log_patterns.h"
#include "orchestrator/store/store_nodes.h"
#include "schema/status.h"

namespace baton {

struct NodePolicy {
  int64_t min_incidents = 2;           // counted incidents that exclude a node
  double window_s = 24 * 3600.0;       // seconds an incident counts for
  double ttl_s = 24 * 3600.0;          // seconds an automatic exclusion lasts
  double probation_s = 24 * 3600.0;    // seconds after re-admission when one incident excludes
  double max_excluded_fraction = 0.1;  // of a partition's nodes, at most, excluded for a job
  std::vector<NodeFaultPattern> patterns = DefaultNodeFaultPatterns();
};

// "90", "90s", "15m", "6h", "2d" -> seconds. kInvalidArgument naming `what` and the text
// otherwise (negative, zero, not a number, over 365 days).
[[nodiscard]] Result<double> ParseDuration(const std::string& text, const std::string& what);

// The policy at `path`; the defaults when the file does not exist. kConfig naming the file and
// key for an unknown key, a bad value or a pattern that does not compile.
[[nodiscard]] Result<NodePolicy> LoadNodePolicy(const std::string& path);
// $BATON_NODES_CONFIG, else BatonHome() + "/nodes.yaml".
std::string NodePolicyPath();

// What a pass does to one node at `now`, given the times of its incidents.
struct NodeVerdict {
  enum class Action { kNone, kExclude, kExpire } action = Action::kNone;
  double until = 0;     // kExclude: the exclusion's end
  int64_t counted = 0;  // incidents that counted
  std::string reason;   // one line: why
};
NodeVerdict JudgeNode(const NodeRecord& node, const std::vector<double>& incident_times, double now,
                      const NodePolicy& policy);

// Applies `verdict` to `node` (the exclusion columns) at `now`.
void ApplyVerdict(const NodeVerdict& verdict, double now, const NodePolicy& policy,
                  NodeRecord* node);

// Whether `node` is excluded at `now`.
bool ExcludedAt(const NodeRecord& node, double now);

// The exclusions for one job.
struct ExclusionPlan {
  std::vector<std::string> exclude;  // what goes into ExcNodeList= / --exclude=
  struct Refused {
    std::string host;
    std::string why;  // "cannot exclude: job would not fit ..." | "...: over the cap ..."
  };
  std::vector<Refused> refused;
  std::vector<std::string> dropped;  // excluded here but unknown to SLURM now
};
// `excluded`: the partition's excluded hosts, most important first (the caller orders them:
// newest exclusion first). `partition_nodes`: the hosts SLURM lists in the partition.
ExclusionPlan PlanExclusion(const std::vector<std::string>& excluded,
                            const std::vector<std::string>& partition_nodes, int64_t job_nodes,
                            double max_excluded_fraction);

}  // namespace baton
