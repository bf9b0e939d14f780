// StorePool: read-only connections to the run-history database for the HTTP server's handler
// threads.
//
// A Store is one SQLite connection and is not thread-safe, so each request leases its own
// (Store::Open, then PRAGMA query_only so a bug in a handler can never write); up to `max_idle`
// are kept for reuse. In WAL mode these readers never block the ingestion writer and are never
// blocked by it — but *opening* one is: Store::Open checks migrations inside BEGIN IMMEDIATE,
// which waits while ingestion holds the write lock. So Warm() opens the connections up front,
// before the writer starts, and the server never needs more than it has workers. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

class StorePool {
 public:
  StorePool(std::string db_path, size_t max_idle)
      : db_path_(std::move(db_path)), max_idle_(max_idle) {}

  // A leased connection; returns itself to the pool when destroyed. Movable.
  class Lease {
   public:
    Lease(StorePool* pool, std::unique_ptr<Store> store) : pool_(pool), store_(std::move(store)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (store_) pool_->Return(std::move(store_));
    }
    Store& store() { return *store_; }

   private:
    StorePool* pool_;
    std::unique_ptr<Store> store_;
  };

  // Opens connections until `n` are idle. Call before ingestion starts writing.
  [[nodiscard]] Status Warm(size_t n);

  // An idle connection, or a new one (which may wait for the writer: see above). Code::kIo / kData
  // when the database cannot be opened.
  [[nodiscard]] Result<Lease> Acquire();

  const std::string& db_path() const { return db_path_; }

 private:
  void Return(std::unique_ptr<Store> store);
  [[nodiscard]] Result<std::unique_ptr<Store>> OpenReader();

  const std::string db_path_;
  const size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Store>> idle_;  // guarded by mu_
};

}  // namespace baton
