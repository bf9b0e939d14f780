// Series rollups: the multi-resolution min/max nodes of every run's effective step rows
// (table step_rollups, docs/store.md), kept by the store in the same transaction as the rows.
//
// RollupMaintainer is owned by a Store: InsertStepInTx marks the level-0 block of each written
// step dirty, and the connection's pre-commit hook (Db::SetTransactionHooks) recomputes
// the dirty blocks from their rows — superseded rows drop out, late rows come in — and then
// their ancestors from their children, before COMMIT. A rollback forgets the marks. A run
// without a complete set of nodes (ingested before schema version 3, or written with another
// node layout) is rebuilt whole the next time any of its steps is written.
//
// The readers below are what the series endpoint (orchestrator/store/series_rollup_reader.h)
// needs: nodes of a range of blocks, the rows of one attempt's block, whether a run is covered.
// Read-only; one Store per thread like the rest of the store.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "orchestrator/store/db.h"
#include "orchestrator/store/series_rollup_node.h"
#include "schema/status.h"

namespace baton {

class RollupMaintainer {
 public:
  void MarkDirty(int64_t run_id, int64_t step) { dirty_[run_id].insert(RollupBlockOf(step, 0)); }
  // Recomputes every dirty node (inside the caller's transaction) and forgets the marks.
  [[nodiscard]] Status Flush(Db& db);
  void Forget() { dirty_.clear(); }
  // Off only to measure what the rollups cost (bench/web_bench.sh): a run written meanwhile
  // loses its "covered" mark (it is read from its rows) until a later write rebuilds it.
  void set_enabled(bool on) { enabled_ = on; }

  // Drops and recomputes all of one run's nodes from its rows, and marks the run covered.
  [[nodiscard]] static Status RebuildRun(Db& db, int64_t run_id);

 private:
  std::map<int64_t, std::set<int64_t>> dirty_;  // run -> level-0 blocks
  bool enabled_ = true;
};

struct StoredRollupNode {
  int64_t block = 0;
  int64_t attempt_id = 0;
  RollupNode node;
};

// True when every step row of the run is summarised by nodes of the current layout.
[[nodiscard]] Result<bool> RollupsCoverRun(Db& db, int64_t run_id);
// Nodes of `level` with block in [first_block, last_block], by block then attempt.
[[nodiscard]] Result<std::vector<StoredRollupNode>> ReadRollupNodes(Db& db, int64_t run_id,
                                                                    int level, int64_t first_block,
                                                                    int64_t last_block);
// Nodes with attempt_id < 0 summarise the superseded rows of attempt -attempt_id.

// The effective rows of one attempt with step in [first, last], in step order.
[[nodiscard]] Result<std::vector<SeriesRow>> ReadEffectiveRows(Db& db, int64_t attempt_id,
                                                               int64_t first, int64_t last);
// One attempt's superseded rows with step in [first, last], in step order.
[[nodiscard]] Result<std::vector<SeriesRow>> ReadSupersededRowsOf(Db& db, int64_t attempt_id,
                                                                  int64_t first, int64_t last);
// The tokens of the run's first effective row at or after `step`; none when no such row.
[[nodiscard]] Result<std::optional<int64_t>> ReadFirstEffectiveTokens(Db& db, int64_t run_id,
                                                                      int64_t step);

}  // namespace baton
