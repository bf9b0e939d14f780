#include "orchestrator/store/bulk_steps.h"

#include <algorithm>

#include "orchestrator/store/series_rollups.h"
#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

// Rows per statement: bounds what a backend materialises for the recursive counter.
constexpr int64_t kRowsPerStatement = 250000;

}  // namespace

Status BulkInsertStepsInTx(Store& store, int64_t run_id, int64_t attempt_id, int64_t first_step,
                           int64_t count, bool rollups) {
  Db& db = StoreInternal::Db(store);
  // A recursive counter is the one row source both SQLite and PostgreSQL have; every value is
  // computed from the step so the statement sends nothing per row.
  BATON_ASSIGN_OR_RETURN(
      Statement * insert,
      db.Prepare("WITH RECURSIVE n(i, x) AS (SELECT ?3, CAST(?3 AS DOUBLE PRECISION) "
                 "UNION ALL SELECT i + 1, x + 1 FROM n WHERE i < ?4) "
                 "INSERT INTO steps (run_id, attempt_id, step, time, lr, loss, loss_video, "
                 "loss_action, grad_norm, tokens, padded_tokens, samples, valid_frames, "
                 "padded_frames, step_time_s, tokens_per_s, in_warmup, epoch, superseded) "
                 "SELECT ?1, ?2, i, 1.7e9 + x * 0.5, 0.0001, 0.4 + 2.0 / (1 + x * 0.001), "
                 "0.3 + 1.2 / (1 + x * 0.001), 0.1 + 0.8 / (1 + x * 0.001), "
                 "0.2 + 1.5 / (1 + x * 0.002), 20000 + (i * 7919) % 4000, 400 + i % 500, 16, "
                 "400, 416, 0.5, 40000 + (i * 7919) % 8000, 0, i / 1000, 0 FROM n"));
  for (int64_t from = first_step; from < first_step + count; from += kRowsPerStatement) {
    const int64_t last = std::min(from + kRowsPerStatement, first_step + count) - 1;
    insert->Reset();
    BATON_RETURN_IF_ERROR(
        insert->Bind(1, run_id).Bind(2, attempt_id).Bind(3, from).Bind(4, last).Run());
  }
  BATON_ASSIGN_OR_RETURN(Statement * last,
                         db.Prepare("UPDATE attempts SET last_step = ?2 "
                                    "WHERE id = ?1 AND (last_step IS NULL OR last_step < ?2)"));
  BATON_RETURN_IF_ERROR(last->Bind(1, attempt_id).Bind(2, first_step + count).Run());
  if (rollups) BATON_RETURN_IF_ERROR(RollupMaintainer::RebuildRun(db, run_id));
  return Status::Ok();
}

}  // namespace baton
