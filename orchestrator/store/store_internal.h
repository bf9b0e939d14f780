// StoreInternal: the store's own modules' way to a Store's connection (db.h).
//
// Only the store speaks SQL: Store keeps its connection private, and the read modules that sit
// beside it in orchestrator/store/ (run-history queries, series rollups and their reader, time
// buckets) reach it through this one door. Nothing outside orchestrator/store/ includes this
// header, except the store's own tests. Thread-compatible, like the Store it opens.
#pragma once

#include "orchestrator/store/db.h"
#include "orchestrator/store/store.h"

namespace baton {

class StoreInternal {
 public:
  static ::baton::Db& Db(Store& store) { return store.db(); }
};

}  // namespace baton
