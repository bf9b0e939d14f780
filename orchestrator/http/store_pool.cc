#include "orchestrator/http/store_pool.h"

#include "orchestrator/store/run_history_queries.h"

namespace baton {

Result<StorePool::Lease> StorePool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Store> s = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(s));
    }
  }
  // Opened outside the lock: opening may wait on the busy timeout.
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenReader());
  return Lease(this, std::move(store));
}

Status StorePool::Warm(size_t n) {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_.size() >= n) return Status::Ok();
    }
    BATON_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenReader());
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(std::move(store));
  }
}

Result<std::unique_ptr<Store>> StorePool::OpenReader() {
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(db_path_));
  BATON_RETURN_IF_ERROR(store->SetQueryOnly());
  return store;
}

void StorePool::Return(std::unique_ptr<Store> store) {
  // An idle connection must not pin an old snapshot (stale reads, WAL that cannot checkpoint).
  ReleaseReadSnapshot(*store);
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(store));
}

}  // namespace baton
