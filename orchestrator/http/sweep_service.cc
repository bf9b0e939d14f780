// RunHistoryService's sweeps (run_history_service.h): GET /api/sweeps and /api/sweeps/{id}, from
// the store's sweep rows and each member's run (sweep_view.h).
#include "orchestrator/history/sweep_view.h"
#include "orchestrator/http/run_history_service.h"

namespace baton {

Result<nlohmann::json> RunHistoryService::ListSweeps() {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  BATON_ASSIGN_OR_RETURN(const std::vector<SweepRecord> sweeps, baton::ListSweeps(lease.store()));
  nlohmann::json out = nlohmann::json::array();
  for (const SweepRecord& s : sweeps) {
    BATON_ASSIGN_OR_RETURN(const SweepView view, BuildSweepView(lease.store(), s));
    nlohmann::json j = SweepViewJson(view);
    j["member_count"] = view.members.size();
    j.erase("members");
    out.push_back(std::move(j));
  }
  return nlohmann::json{{"sweeps", std::move(out)}, {"now", now_()}};
}

Result<nlohmann::json> RunHistoryService::GetSweep(int64_t sweep_id) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  Result<SweepRecord> sweep = FindSweep(lease.store(), std::to_string(sweep_id));
  if (!sweep.ok()) return Status::NotFound("no sweep with id " + std::to_string(sweep_id));
  BATON_ASSIGN_OR_RETURN(const SweepView view, BuildSweepView(lease.store(), *sweep));
  nlohmann::json out = SweepViewJson(view);
  out["now"] = now_();
  return out;
}

}  // namespace baton
