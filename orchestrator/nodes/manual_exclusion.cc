#include "orchestrator/nodes/manual_exclusion.h"

#include "orchestrator/nodes/host_name.h"

namespace baton {

namespace {

Result<std::vector<NodeRecord>> MatchingRows(Store& store, const ManualNodeAction& a) {
  if (!ValidHostName(a.host)) {
    return Status::InvalidArgument("'" + a.host.substr(0, 80) +
                                   "' is not a valid node name (letters, digits, '-' and '.', "
                                   "at most 253 bytes)");
  }
  BATON_ASSIGN_OR_RETURN(std::vector<NodeRecord> rows, FindNodesByHost(store, a.host));
  std::vector<NodeRecord> out;
  for (NodeRecord& n : rows) {
    if ((a.match_any_cluster || n.key.cluster == a.cluster) &&
        (a.match_any_partition || n.key.partition == a.partition))
      out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

Result<std::vector<NodeRecord>> ExcludeNodeByHand(Store& store, const ManualNodeAction& a,
                                                  double now) {
  BATON_ASSIGN_OR_RETURN(std::vector<NodeRecord> rows, MatchingRows(store, a));
  if (!(a.for_s > 0)) return Status::InvalidArgument("--for must be a positive duration");
  const std::string message = "excluded by hand for " + std::to_string(int64_t(a.for_s)) + " s" +
                              (a.reason.empty() ? "" : ": " + a.reason);
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    if (rows.empty()) {
      NodeRecord n;
      n.key = {a.cluster, a.partition, a.host};
      BATON_ASSIGN_OR_RETURN(n.id, EnsureNodeInTx(store, n.key, now));
      n.first_seen_at = now;
      rows.push_back(n);
    }
    for (NodeRecord& n : rows) {
      n.excluded_at = now;
      n.excluded_until = now + a.for_s;
      n.excluded_by = a.user;
      n.exclusion_reason = message;
      BATON_RETURN_IF_ERROR(UpdateNodeInTx(store, n));
      BATON_RETURN_IF_ERROR(
          AppendNodeActionInTx(store, {0, n.id, a.user, "exclude", now, message}));
    }
    return Status::Ok();
  }));
  return rows;
}

Result<std::vector<NodeRecord>> ReadmitNode(Store& store, const ManualNodeAction& a,
                                            const NodePolicy& policy, double now) {
  BATON_ASSIGN_OR_RETURN(std::vector<NodeRecord> rows, MatchingRows(store, a));
  if (rows.empty()) return Status::NotFound("no node '" + a.host + "' in the node ledger");
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    for (NodeRecord& n : rows) {
      n.excluded_at.reset();
      n.excluded_until.reset();
      n.admitted_at = now;
      n.probation_until = now + policy.probation_s;
      BATON_RETURN_IF_ERROR(UpdateNodeInTx(store, n));
      BATON_RETURN_IF_ERROR(AppendNodeActionInTx(
          store, {0, n.id, a.user, "readmit", now, "re-admitted by hand, on probation"}));
    }
    return Status::Ok();
  }));
  return rows;
}

}  // namespace baton
