// RunHistoryService's node ledger (run_history_service.h): GET /api/nodes, the report of
// node_report.h. serve's own sync pass keeps the ledger current; this only reads it.
#include "orchestrator/http/run_history_service.h"
#include "orchestrator/nodes/node_report.h"

namespace baton {

Result<nlohmann::json> RunHistoryService::GetNodes() {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  const double now = now_();
  BATON_ASSIGN_OR_RETURN(nlohmann::json nodes, NodeReport(lease.store(), now));
  return nlohmann::json{{"nodes", std::move(nodes)}, {"now", now}};
}

}  // namespace baton
