// The node ledger (nodes, node_incidents, node_actions, node_log_cursors; docs/nodes.md): what
// baton holds against each node of a SLURM cluster and partition, across runs, and the
// exclusions that follow from it.
//
// Part of the store, the only code that speaks SQL. Free functions over a Store the caller
// owns; *InTx ones expect the caller's Write() transaction. The rules that decide an exclusion
// live in orchestrator/nodes/node_policy.h; these only read and write rows. Thread-compatible,
// like the Store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

struct NodeKey {
  std::string cluster;    // SLURM's ClusterName ('' = unknown)
  std::string partition;  // '' = the cluster's default partition
  std::string host;       // ValidHostName
};

struct NodeRecord {
  int64_t id = 0;
  NodeKey key;
  double first_seen_at = 0;
  std::optional<double> excluded_at;     // none: not excluded
  std::optional<double> excluded_until;  // when the exclusion ends
  std::string excluded_by;               // auto | the user who excluded it by hand
  std::string exclusion_reason;
  double admitted_at = 0;                 // last re-admission; older incidents no longer count
  std::optional<double> probation_until;  // one incident before this excludes again
};

struct NodeIncidentRecord {
  int64_t id = 0;  // assigned by the store
  int64_t node_id = 0;
  int64_t run_id = 0;
  std::string job_id;
  int64_t restart_count = 0;
  int64_t in_job_seq = 0;
  int64_t rank = -1;   // -1: no single rank
  std::string kind;    // hang | signal | oom | preflight | ecc | xid | ...
  std::string source;  // launcher | preflight | log | manual
  std::string evidence;
  double at = 0;
};

struct NodeActionRecord {
  int64_t id = 0;
  int64_t node_id = 0;
  std::string user;    // who asked; 'baton' for the sync pass
  std::string action;  // exclude | readmit | expire | refuse | drop
  double asked_at = 0;
  std::string message;
};

// The node's id, inserting a row (first seen `now`) when new.
[[nodiscard]] Result<int64_t> EnsureNodeInTx(Store& store, const NodeKey& key, double now);
// Writes the exclusion columns of `n` (by n.id).
[[nodiscard]] Status UpdateNodeInTx(Store& store, const NodeRecord& n);
// Every node, by cluster, partition and host; '' in a filter lets every value through.
[[nodiscard]] Result<std::vector<NodeRecord>> ListNodes(Store& store,
                                                        const std::string& cluster = "",
                                                        const std::string& partition = "");
// The rows of one host (one per cluster and partition it was seen in).
[[nodiscard]] Result<std::vector<NodeRecord>> FindNodesByHost(Store& store,
                                                              const std::string& host);
[[nodiscard]] Result<NodeRecord> GetNode(Store& store, int64_t node_id);

// True when the incident is new (the same attempt, kind and evidence are recorded once).
[[nodiscard]] Result<bool> AddNodeIncidentInTx(Store& store, const NodeIncidentRecord& i);
// The node's incidents at or after `since`, newest first.
[[nodiscard]] Result<std::vector<NodeIncidentRecord>> ListNodeIncidents(Store& store,
                                                                        int64_t node_id,
                                                                        double since = 0,
                                                                        int64_t limit = 1000);

[[nodiscard]] Status AppendNodeActionInTx(Store& store, const NodeActionRecord& a);
// Newest first.
[[nodiscard]] Result<std::vector<NodeActionRecord>> ListNodeActions(Store& store, int64_t node_id,
                                                                    int64_t limit = 100);

// Bytes of a job log already scanned for node-fault lines (0 when never).
[[nodiscard]] Result<int64_t> NodeLogCursor(Store& store, const std::string& path);
[[nodiscard]] Status SetNodeLogCursorInTx(Store& store, const std::string& path, int64_t offset);

}  // namespace baton
