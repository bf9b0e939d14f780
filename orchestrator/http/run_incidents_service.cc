// RunHistoryService::ListIncidents: a run's incidents and their alert deliveries
// (store_alerts.h) for the run page, newest first.
#include "orchestrator/http/run_history_service.h"
#include "orchestrator/store/store_alerts.h"

using nlohmann::json;

namespace baton {

Result<json> RunHistoryService::ListIncidents(int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  BATON_RETURN_IF_ERROR(lease.store().GetRun(run_id).status());
  BATON_ASSIGN_OR_RETURN(const std::vector<IncidentRecord> incidents,
                         baton::ListIncidents(lease.store(), run_id, 200));
  json items = json::array();
  for (const IncidentRecord& i : incidents) {
    BATON_ASSIGN_OR_RETURN(const std::vector<DeliveryRecord> ds,
                           ListDeliveries(lease.store(), i.id));
    items.push_back(IncidentJson(i, ds));
  }
  return json{{"run_id", run_id}, {"incidents", std::move(items)}};
}

}  // namespace baton
