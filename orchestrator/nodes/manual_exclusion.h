// `baton nodes exclude NODE --for D` and `baton nodes readmit NODE`: an admin's hand on the
// ledger (docs/nodes.md, "Manual control"). Each is audited in node_actions with the Unix user
// who asked. A hand exclusion obeys the same cap as an automatic one when it is applied to a
// job; a re-admission, by hand or at the end of an exclusion, puts the node on probation.
// Stateless; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/nodes/node_policy.h"
#include "orchestrator/store/store.h"
#include "orchestrator/store/store_nodes.h"

namespace baton {

struct ManualNodeAction {
  std::string host;       // checked: ValidHostName, else kInvalidArgument (64)
  std::string cluster;    // the ledger rows of this cluster ('' with match_any: every cluster)
  std::string partition;  // likewise
  bool match_any_cluster = true;
  bool match_any_partition = true;
  std::string user;    // who asked (audited)
  double for_s = 0;    // exclude: how long
  std::string reason;  // exclude: the admin's words (may be '')
};

// Excludes the host on every matching ledger row until now + for_s; a host the ledger does not
// know yet gets a row on (cluster, partition) as given. The rows changed.
[[nodiscard]] Result<std::vector<NodeRecord>> ExcludeNodeByHand(Store& store,
                                                                const ManualNodeAction& a,
                                                                double now);

// Ends the host's exclusion on every matching row and puts it on probation for the policy's
// probation_s. kNotFound (66) when the ledger has no such node.
[[nodiscard]] Result<std::vector<NodeRecord>> ReadmitNode(Store& store, const ManualNodeAction& a,
                                                          const NodePolicy& policy, double now);

}  // namespace baton
