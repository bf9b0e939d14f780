// Bulk step rows: a large run history made fast, for the store bench (bench/store_bench.sh) —
// millions of background rows in one statement each instead of one event at a time through the
// ingest path. The rows are synthetic (a decaying loss, a constant lr, no superseded rows) but
// have every column a real step row has, so the tables and indexes are as large as a real
// history's. Owned by the store: only orchestrator/store/ speaks SQL.
//
// Not used by any command: a real history always comes through ingest (event_ingester.h).
#pragma once

#include <cstdint>

#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

// Inserts step rows first_step .. first_step + count - 1 of `attempt_id` (a run_id attempt with
// no rows in that range), raises the attempt's last_step past them, and, with `rollups`,
// rebuilds the run's series rollups so the series endpoint reads them as it would after ingest.
// Must run inside the caller's Store::Write transaction.
[[nodiscard]] Status BulkInsertStepsInTx(Store& store, int64_t run_id, int64_t attempt_id,
                                         int64_t first_step, int64_t count, bool rollups);

}  // namespace baton
