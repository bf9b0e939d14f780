#include "orchestrator/store/series_rollup_reader.h"

#include <algorithm>
#include <cmath>

#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

// Level-0 blocks of rows kept per request before the cache starts over.
constexpr size_t kMaxCachedRowBlocks = 4096;

int64_t LastStepOf(int64_t block, int level) { return RollupBlockFirstStep(block + 1, level) - 1; }

}  // namespace

Db& RollupSeriesReader::db() { return StoreInternal::Db(store_); }

Status RollupSeriesReader::Load() {
  BATON_ASSIGN_OR_RETURN(const bool covered, RollupsCoverRun(db(), run_id_));
  if (!covered) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const std::vector<StoredRollupNode> top,
                         ReadRollupNodes(db(), run_id_, kTop, 0, INT64_MAX));
  std::map<int64_t, RollupNode> per_attempt;
  for (const StoredRollupNode& n : top) {
    nodes_[{kTop, n.block}].push_back(n);
    AppendNode(&per_attempt[n.attempt_id], n.node);
    // Superseded rows' nodes (attempt_id < 0, series_rollups.h) are their own series.
    if (n.attempt_id < 0) {
      superseded_min_time_ = std::min(superseded_min_time_, n.node.min_time);
    } else {
      min_time_ = std::min(min_time_, n.node.min_time);
    }
  }
  for (const auto& [id, node] : per_attempt) {
    if (node.rows == 0) continue;
    (id < 0 ? superseded_ : attempts_).push_back({id, node});
  }
  // The row path groups superseded rows by attempt (ascending id), each in step order.
  std::sort(superseded_.begin(), superseded_.end(),
            [](const auto& x, const auto& y) { return -x.attempt_id < -y.attempt_id; });
  std::sort(attempts_.begin(), attempts_.end(),
            [](const auto& x, const auto& y) { return x.node.first_step() < y.node.first_step(); });
  // Each attempt's effective rows must be one contiguous stretch of the step-ordered series
  // (the downsampler's segments): their step ranges may not interleave.
  usable_ = true;
  for (size_t i = 1; i < attempts_.size(); ++i) {
    if (attempts_[i].node.first_step() <= attempts_[i - 1].node.last_step()) usable_ = false;
  }
  // expected_lr nodes assume the schedule never decreases (a negative base rate would not).
  if (schedule_.known && !(schedule_.base_lr >= 0)) usable_ = false;
  return Status::Ok();
}

double RollupSeriesReader::RowValue(QKey q, const SeriesRow& r) const {
  return q.slot == 0 ? 0.0 : SeriesValue(q.key, r, schedule_);
}

bool RollupSeriesReader::NodeStats(QKey q, const RollupNode& n, RollupKeyStats* out) const {
  if (q.slot >= 0) {
    *out = n.key[q.slot];
    return true;
  }
  if (!schedule_.known) {
    *out = RollupKeyStats{};
    return true;
  }
  // The schedule never decreases with the step: over a node where it takes the same value at
  // the first and the last row it is constant, so the first row is the minimum and the maximum.
  const RollupKeyStats& row = n.row();
  const double first = schedule_.At(row.first.step), last = schedule_.At(row.last.step);
  if (first != last) return false;
  RollupPoint f = row.first, l = row.last;
  f.value = first;
  l.value = last;
  *out = RollupKeyStats{row.count, f, l, f, f};
  return true;
}

Result<const std::vector<StoredRollupNode>*> RollupSeriesReader::NodesAt(int level, int64_t block) {
  auto it = nodes_.find({level, block});
  if (it != nodes_.end()) return &it->second;
  static const std::vector<StoredRollupNode> kNone;
  if (level >= kTop) return &kNone;
  const int64_t parent = block >> kRollupFanoutBits;
  if (!loaded_groups_.insert({level, parent}).second) return &kNone;
  const int64_t first = parent << kRollupFanoutBits;
  BATON_ASSIGN_OR_RETURN(
      const std::vector<StoredRollupNode> group,
      ReadRollupNodes(db(), run_id_, level, first, first + (int64_t(1) << kRollupFanoutBits) - 1));
  for (const StoredRollupNode& n : group) nodes_[{level, n.block}].push_back(n);
  it = nodes_.find({level, block});
  return it != nodes_.end() ? &it->second : &kNone;
}

Result<const std::vector<SeriesRow>*> RollupSeriesReader::RowsAt(int64_t attempt_id,
                                                                 int64_t block) {
  auto it = rows_.find({attempt_id, block});
  if (it != rows_.end()) return &it->second;
  if (rows_.size() >= kMaxCachedRowBlocks) rows_.clear();
  // A negative owner is the attempt's superseded rows (series_rollups.h).
  const int64_t first = RollupBlockFirstStep(block, 0), last = LastStepOf(block, 0);
  BATON_ASSIGN_OR_RETURN(std::vector<SeriesRow> rows,
                         attempt_id < 0 ? ReadSupersededRowsOf(db(), -attempt_id, first, last)
                                        : ReadEffectiveRows(db(), attempt_id, first, last));
  return &rows_.emplace(std::make_pair(attempt_id, block), std::move(rows)).first->second;
}

namespace {

// The attempt's node among a block's nodes when it has rows in [a, b], else null.
const RollupNode* OverlappingNode(const std::vector<StoredRollupNode>& nodes, int64_t attempt_id,
                                  int64_t a, int64_t b) {
  const RollupNode* node = nullptr;
  for (const StoredRollupNode& n : nodes) {
    if (n.attempt_id == attempt_id) node = &n.node;
  }
  if (node == nullptr || node->rows == 0) return nullptr;
  if (node->last_step() < a || node->first_step() > b) return nullptr;
  return node;
}

}  // namespace

Status RollupSeriesReader::AccumulateNode(QKey q, int64_t attempt_id, int level, int64_t block,
                                          int64_t a, int64_t b, CellAcc* acc) {
  BATON_ASSIGN_OR_RETURN(const std::vector<StoredRollupNode>* nodes, NodesAt(level, block));
  const RollupNode* node = OverlappingNode(*nodes, attempt_id, a, b);
  if (node == nullptr) return Status::Ok();
  RollupKeyStats stats;
  if (a <= node->first_step() && node->last_step() <= b && NodeStats(q, *node, &stats)) {
    AppendKeyStats(&acc->k, acc->tokens, stats);
    acc->tokens += node->tokens;
    acc->rows += node->rows;
    return Status::Ok();
  }
  if (level == 0) {
    BATON_ASSIGN_OR_RETURN(const std::vector<SeriesRow>* rows, RowsAt(attempt_id, block));
    for (const SeriesRow& r : *rows) {
      if (r.step < a || r.step > b) continue;
      const double v = RowValue(q, r);
      if (!std::isnan(v)) {
        const RollupPoint p{r.step, v, r.time, r.tokens};
        AppendKeyStats(&acc->k, acc->tokens, RollupKeyStats{1, p, p, p, p});
      }
      acc->tokens += r.tokens;
      acc->rows += 1;
    }
    return Status::Ok();
  }
  const int64_t first_child = block << kRollupFanoutBits;
  for (int64_t c = first_child; c < first_child + (int64_t(1) << kRollupFanoutBits); ++c) {
    if (LastStepOf(c, level - 1) < a || RollupBlockFirstStep(c, level - 1) > b) continue;
    BATON_RETURN_IF_ERROR(AccumulateNode(q, attempt_id, level - 1, c, a, b, acc));
  }
  return Status::Ok();
}

Status RollupSeriesReader::Accumulate(QKey q, int64_t attempt_id, int64_t a, int64_t b,
                                      CellAcc* acc) {
  if (a > b) return Status::Ok();
  // Top-level blocks of the range that exist (the map holds every one read by Load).
  auto it = nodes_.lower_bound({kTop, RollupBlockOf(std::max<int64_t>(a, 0), kTop)});
  for (; it != nodes_.end() && it->first.first == kTop; ++it) {
    const int64_t block = it->first.second;
    if (RollupBlockFirstStep(block, kTop) > b) break;
    BATON_RETURN_IF_ERROR(AccumulateNode(q, attempt_id, kTop, block, a, b, acc));
  }
  return Status::Ok();
}

Status RollupSeriesReader::Enumerate(QKey q, int64_t attempt_id, int level, int64_t block,
                                     int64_t a, int64_t b, int64_t* running,
                                     std::vector<SeriesOutPoint>* out) {
  BATON_ASSIGN_OR_RETURN(const std::vector<StoredRollupNode>* nodes, NodesAt(level, block));
  const RollupNode* node = OverlappingNode(*nodes, attempt_id, a, b);
  if (node == nullptr) return Status::Ok();
  RollupKeyStats stats;
  if (a <= node->first_step() && node->last_step() <= b && NodeStats(q, *node, &stats) &&
      stats.count == 0) {
    *running += node->tokens;  // nothing to show here, but its tokens were seen
    return Status::Ok();
  }
  if (level == 0) {
    BATON_ASSIGN_OR_RETURN(const std::vector<SeriesRow>* rows, RowsAt(attempt_id, block));
    for (const SeriesRow& r : *rows) {
      if (r.step < a || r.step > b) continue;
      *running += r.tokens;
      const double v = RowValue(q, r);
      if (!std::isnan(v)) out->push_back({r.step, v, attempt_id, *running, r.time});
    }
    return Status::Ok();
  }
  const int64_t first_child = block << kRollupFanoutBits;
  for (int64_t c = first_child; c < first_child + (int64_t(1) << kRollupFanoutBits); ++c) {
    if (LastStepOf(c, level - 1) < a || RollupBlockFirstStep(c, level - 1) > b) continue;
    BATON_RETURN_IF_ERROR(Enumerate(q, attempt_id, level - 1, c, a, b, running, out));
  }
  return Status::Ok();
}

Result<int64_t> RollupSeriesReader::TokensBefore(int64_t step) {
  int64_t sum = 0;
  for (const RollupAttemptTotals& at : attempts_) {
    if (at.node.first_step() >= step) continue;
    if (at.node.last_step() < step) {
      sum += at.node.tokens;
      continue;
    }
    CellAcc acc;
    BATON_RETURN_IF_ERROR(Accumulate(Rows(), at.attempt_id, at.node.first_step(), step - 1, &acc));
    sum += acc.tokens;
  }
  return sum;
}

Result<int64_t> RollupSeriesReader::TokensSeenAtOrAfter(int64_t step) {
  // A superseded row at `step` was superseded by a later attempt's row at the same step, so the
  // effective series has that step: tokens seen through it, from the nodes (no query).
  int64_t at_rows = 0, at_tokens = 0;
  for (const RollupAttemptTotals& at : attempts_) {
    if (step < at.node.first_step() || step > at.node.last_step()) continue;
    CellAcc acc;
    BATON_RETURN_IF_ERROR(Accumulate(Rows(), at.attempt_id, step, step, &acc));
    at_rows += acc.rows;
    at_tokens += acc.tokens;
  }
  if (at_rows > 0) {
    BATON_ASSIGN_OR_RETURN(const int64_t before, TokensBefore(step));
    return before + at_tokens;
  }
  BATON_ASSIGN_OR_RETURN(const std::optional<int64_t> own,
                         ReadFirstEffectiveTokens(db(), run_id_, step));
  if (!own) {
    int64_t all = 0;
    for (const RollupAttemptTotals& at : attempts_) all += at.node.tokens;
    return all;
  }
  // No effective row lies in [step, next): the tokens before `step` are those before it.
  BATON_ASSIGN_OR_RETURN(const int64_t before, TokensBefore(step));
  return before + *own;
}

}  // namespace baton
