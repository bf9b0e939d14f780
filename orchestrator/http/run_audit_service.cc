// RunHistoryService::ListActions: the audit of a run's write actions (store_audit.h) for the run
// page's list, newest first.
#include "orchestrator/http/run_history_service.h"
#include "orchestrator/store/record_json.h"
#include "orchestrator/store/store_audit.h"

using nlohmann::json;

namespace baton {

Result<json> RunHistoryService::ListActions(int64_t run_id, const PageRequest& page) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  BATON_RETURN_IF_ERROR(lease.store().GetRun(run_id).status());
  BATON_ASSIGN_OR_RETURN(const int64_t total, CountRunActions(lease.store(), run_id));
  BATON_ASSIGN_OR_RETURN(const std::vector<RunActionRecord> rows,
                         ListRunActions(lease.store(), run_id, page.limit, page.offset));
  json items = json::array();
  for (const RunActionRecord& a : rows) {
    items.push_back({{"id", a.id},
                     {"user", a.user},
                     {"action", a.action},
                     {"source", a.source},
                     {"at", JsonNumber(a.asked_at)},
                     {"result", a.result},
                     {"http_status", a.http_status == 0 ? json(nullptr) : json(a.http_status)},
                     {"message", a.message}});
  }
  return json{{"run_id", run_id},
              {"write_actions", write_actions_},
              {"actions", std::move(items)},
              {"page", {{"limit", page.limit}, {"offset", page.offset}, {"total", total}}}};
}

}  // namespace baton
