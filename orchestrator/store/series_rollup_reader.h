// RollupSeriesReader: the series endpoint's points of one run read from its min/max rollups
// (series_rollups.h) instead of its rows — the same points the row path's downsampler
// (orchestrator/http/series_downsampler.h) keeps, by the same value rule (series_values.h), at a
// cost that grows with max_points, not with the run's length.
//
// The downsampler's cells are (attempt, step bucket) ranges; a cell's first, last, minimum and
// maximum point is the merge of the stored nodes inside it plus the rows of the level-0 blocks
// cut by its edges. "Tokens seen" of a point is the tokens of every effective row before the
// cell plus the node's own running sum. The reader holds the nodes and rows it has read for one
// request only (bounded by the cells it visits; the row cache is dropped past a fixed size).
//
// Usable only when each attempt's effective rows form one contiguous step range (the normal
// case: a resume supersedes everything after its step); otherwise usable() is false and the
// caller takes the row path. Part of the store (it reads the rollup tables); not thread-safe:
// one per request.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "orchestrator/store/series_rollups.h"
#include "orchestrator/store/series_values.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

// One kept point of a series, as the endpoint answers it.
struct SeriesOutPoint {
  int64_t step = 0;
  double value = 0;
  int64_t attempt_id = 0;
  int64_t tokens_seen = 0;
  double time = 0;
};

// Effective totals of one attempt, from its top-level nodes.
struct RollupAttemptTotals {
  int64_t attempt_id = 0;
  RollupNode node;  // merged over the whole attempt
};

class RollupSeriesReader {
 public:
  RollupSeriesReader(Store& store, int64_t run_id, ExpectedSchedule schedule)
      : store_(store), run_id_(run_id), schedule_(std::move(schedule)) {}

  // Reads the top-level nodes. usable() tells whether the rollup path applies.
  [[nodiscard]] Status Load();
  bool usable() const { return usable_; }

  // The kept points of `key` over effective steps in [from, to], at
  // most max_points (as DownsampleMinMax), plus the number of effective rows in the range.
  [[nodiscard]] Status Points(SeriesKey key, int64_t from, int64_t to, size_t max_points,
                              std::vector<SeriesOutPoint>* out, int64_t* rows_in_range);
  // The same for the superseded rows (grouped by attempt as the row path does), each point at
  // the tokens seen through its step in the effective series.
  [[nodiscard]] Status SupersededPoints(SeriesKey key, int64_t from, int64_t to, size_t max_points,
                                        std::vector<SeriesOutPoint>* out, int64_t* rows_in_range);
  // Earliest time of a superseded row (INFINITY when none).
  double superseded_min_time() const { return superseded_min_time_; }
  // Tokens seen up to and including the first effective step >= step (all tokens when none):
  // what a superseded point at `step` is plotted at.
  [[nodiscard]] Result<int64_t> TokensSeenAtOrAfter(int64_t step);
  // Earliest time of an effective row (INFINITY when none).
  double min_time() const { return min_time_; }
  // Per attempt, in step order.
  const std::vector<RollupAttemptTotals>& attempts() const { return attempts_; }

 private:
  static constexpr int kTop = kRollupLevels - 1;  // the level Load reads whole

  // What a walk over nodes and rows reads: a node slot (0: every row, with no value), or a
  // key derived at query time (slot -1, expected_lr).
  struct QKey {
    int slot = 0;
    SeriesKey key = SeriesKey::kLr;  // unused for slot 0
  };
  static QKey Rows() { return QKey{}; }
  static QKey Of(SeriesKey k) { return QKey{RollupSlot(k), k}; }
  struct CellAcc {
    int64_t rows = 0;
    int64_t tokens = 0;
    RollupKeyStats k;
  };
  // series_rollup_points.cc
  [[nodiscard]] Status PartPoints(const std::vector<RollupAttemptTotals>& part, SeriesKey key,
                                  int64_t from, int64_t to, size_t max_points,
                                  std::vector<SeriesOutPoint>* out, int64_t* rows_in_range);
  [[nodiscard]] Status Accumulate(QKey q, int64_t attempt_id, int64_t a, int64_t b, CellAcc* acc);
  [[nodiscard]] Status AccumulateNode(QKey q, int64_t attempt_id, int level, int64_t block,
                                      int64_t a, int64_t b, CellAcc* acc);
  [[nodiscard]] Status Enumerate(QKey q, int64_t attempt_id, int level, int64_t block, int64_t a,
                                 int64_t b, int64_t* running, std::vector<SeriesOutPoint>* out);
  [[nodiscard]] Result<const std::vector<StoredRollupNode>*> NodesAt(int level, int64_t block);
  [[nodiscard]] Result<const std::vector<SeriesRow>*> RowsAt(int64_t attempt_id, int64_t block);
  [[nodiscard]] Result<int64_t> TokensBefore(int64_t step);
  // The node's stats for q; false when the node cannot stand for its rows (expected_lr over a
  // range where the schedule changes).
  bool NodeStats(QKey q, const RollupNode& n, RollupKeyStats* out) const;
  double RowValue(QKey q, const SeriesRow& r) const;
  Db& db();

  Store& store_;
  int64_t run_id_;
  ExpectedSchedule schedule_;
  bool usable_ = false;
  double min_time_ = INFINITY;
  double superseded_min_time_ = INFINITY;
  std::vector<RollupAttemptTotals> attempts_;    // effective rows, in step order
  std::vector<RollupAttemptTotals> superseded_;  // superseded rows (negative ids), by attempt
  std::map<int64_t, int64_t> seen_at_;           // step -> tokens seen (superseded points)
  std::map<std::pair<int, int64_t>, std::vector<StoredRollupNode>> nodes_;
  std::set<std::pair<int, int64_t>> loaded_groups_;  // (level, parent block) read
  std::map<std::pair<int64_t, int64_t>, std::vector<SeriesRow>> rows_;
};

}  // namespace baton
