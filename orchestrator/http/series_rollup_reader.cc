#include "orchestrator/http/series_rollup_reader.h"

#include <algorithm>
#include <cmath>

namespace baton {

namespace {

constexpr int kTop = kRollupLevels - 1;
// Level-0 blocks of rows kept per request before the cache starts over.
constexpr size_t kMaxCachedRowBlocks = 4096;
// Points a (attempt, bucket) cell keeps: first, min, max, last (series_downsampler.cc).
constexpr size_t kPointsPerCell = 4;

// The index of a stored key by the endpoint's name; -1 for expected_lr, -2 when unknown.
int StoredKeyIndex(const std::string& key) {
  static const std::map<std::string, RollupKey> kKeys = {{"lr", RollupKey::kLr},
                                                         {"loss", RollupKey::kLoss},
                                                         {"loss_video", RollupKey::kLossVideo},
                                                         {"loss_action", RollupKey::kLossAction},
                                                         {"grad_norm", RollupKey::kGradNorm},
                                                         {"tokens_per_s", RollupKey::kTokensPerS},
                                                         {"step_time_s", RollupKey::kStepTimeS},
                                                         {"padding", RollupKey::kPadding},
                                                         {"tokens", RollupKey::kTokens}};
  if (key == "expected_lr") return -1;
  auto it = kKeys.find(key);
  return it == kKeys.end() ? -2 : static_cast<int>(it->second);
}

int64_t LastStepOf(int64_t block, int level) { return RollupBlockFirstStep(block + 1, level) - 1; }

}  // namespace

Status RollupSeriesReader::Load() {
  BATON_ASSIGN_OR_RETURN(const bool covered, RollupsCoverRun(store_.db(), run_id_));
  if (!covered) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const std::vector<StoredRollupNode> top,
                         ReadRollupNodes(store_.db(), run_id_, kTop, 0, INT64_MAX));
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

double RollupSeriesReader::ValueOf(const std::string& key, const RollupRow& r) const {
  const int stored = StoredKeyIndex(key);
  return stored == -2 ? NAN : RowValue(QKey{stored}, r);
}

double RollupSeriesReader::RowValue(QKey q, const RollupRow& r) const {
  if (q.stored >= 0) return RollupValue(static_cast<RollupKey>(q.stored), r);
  return schedule_.known ? schedule_.At(r.step) : NAN;
}

bool RollupSeriesReader::NodeStats(QKey q, const RollupNode& n, RollupKeyStats* out) const {
  if (q.stored >= 0) {
    *out = n.key[q.stored];
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
  BATON_ASSIGN_OR_RETURN(const std::vector<StoredRollupNode> group,
                         ReadRollupNodes(store_.db(), run_id_, level, first,
                                         first + (int64_t(1) << kRollupFanoutBits) - 1));
  for (const StoredRollupNode& n : group) nodes_[{level, n.block}].push_back(n);
  it = nodes_.find({level, block});
  return it != nodes_.end() ? &it->second : &kNone;
}

Result<const std::vector<RollupRow>*> RollupSeriesReader::RowsAt(int64_t attempt_id,
                                                                 int64_t block) {
  auto it = rows_.find({attempt_id, block});
  if (it != rows_.end()) return &it->second;
  if (rows_.size() >= kMaxCachedRowBlocks) rows_.clear();
  // A negative owner is the attempt's superseded rows (series_rollups.h).
  const int64_t first = RollupBlockFirstStep(block, 0), last = LastStepOf(block, 0);
  BATON_ASSIGN_OR_RETURN(std::vector<RollupRow> rows,
                         attempt_id < 0
                             ? ReadSupersededRowsOf(store_.db(), -attempt_id, first, last)
                             : ReadEffectiveRows(store_.db(), attempt_id, first, last));
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
    BATON_ASSIGN_OR_RETURN(const std::vector<RollupRow>* rows, RowsAt(attempt_id, block));
    for (const RollupRow& r : *rows) {
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
    BATON_ASSIGN_OR_RETURN(const std::vector<RollupRow>* rows, RowsAt(attempt_id, block));
    for (const RollupRow& r : *rows) {
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
    BATON_RETURN_IF_ERROR(Accumulate(QKey{0}, at.attempt_id, at.node.first_step(), step - 1, &acc));
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
    BATON_RETURN_IF_ERROR(Accumulate(QKey{0}, at.attempt_id, step, step, &acc));
    at_rows += acc.rows;
    at_tokens += acc.tokens;
  }
  if (at_rows > 0) {
    BATON_ASSIGN_OR_RETURN(const int64_t before, TokensBefore(step));
    return before + at_tokens;
  }
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      store_.db().Prepare("SELECT tokens FROM steps WHERE run_id = ?1 AND step >= ?2 AND "
                          "superseded = 0 ORDER BY step LIMIT 1"));
  s->Bind(1, run_id_).Bind(2, step);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const int64_t own = row ? s->Int(0) : 0;
  s->Reset();
  if (!row) {
    int64_t all = 0;
    for (const RollupAttemptTotals& at : attempts_) all += at.node.tokens;
    return all;
  }
  // No effective row lies in [step, next): the tokens before `step` are those before it.
  BATON_ASSIGN_OR_RETURN(const int64_t before, TokensBefore(step));
  return before + own;
}

Status RollupSeriesReader::Points(const std::string& key, int64_t from, int64_t to,
                                  size_t max_points, std::vector<SeriesOutPoint>* out,
                                  int64_t* rows_in_range) {
  return PartPoints(attempts_, key, from, to, max_points, out, rows_in_range);
}

Status RollupSeriesReader::SupersededPoints(const std::string& key, int64_t from, int64_t to,
                                            size_t max_points, std::vector<SeriesOutPoint>* out,
                                            int64_t* rows_in_range) {
  BATON_RETURN_IF_ERROR(PartPoints(superseded_, key, from, to, max_points, out, rows_in_range));
  // A superseded point is plotted at the tokens seen through its step in the effective series;
  // its attempt is the one that wrote it.
  for (SeriesOutPoint& p : *out) {
    auto it = seen_at_.find(p.step);
    if (it == seen_at_.end()) {
      BATON_ASSIGN_OR_RETURN(const int64_t seen, TokensSeenAtOrAfter(p.step));
      it = seen_at_.emplace(p.step, seen).first;
    }
    p.tokens_seen = it->second;
    p.attempt_id = -p.attempt_id;
  }
  return Status::Ok();
}

Status RollupSeriesReader::PartPoints(const std::vector<RollupAttemptTotals>& part,
                                      const std::string& key, int64_t from, int64_t to,
                                      size_t max_points, std::vector<SeriesOutPoint>* out,
                                      int64_t* rows_in_range) {
  out->clear();
  *rows_in_range = 0;
  const int stored = StoredKeyIndex(key);
  if (stored == -2) return Status::Internal("no rollup for series key " + key);
  const QKey q{stored};

  // What the downsampler looks at first: valid points, their step span, and segments.
  struct Span {
    int64_t attempt_id;
    int64_t first, last;  // of the attempt's rows in [from, to]
  };
  std::vector<Span> spans;
  int64_t valid = 0, lo = INT64_MAX, hi = INT64_MIN;
  for (const RollupAttemptTotals& at : part) {
    const int64_t a = std::max(from, at.node.first_step()), b = std::min(to, at.node.last_step());
    if (a > b) continue;
    CellAcc acc;
    BATON_RETURN_IF_ERROR(Accumulate(q, at.attempt_id, a, b, &acc));
    if (acc.rows == 0) continue;
    *rows_in_range += acc.rows;
    spans.push_back({at.attempt_id, a, b});
    if (acc.k.count == 0) continue;
    valid += acc.k.count;
    lo = std::min(lo, acc.k.first.step);
    hi = std::max(hi, acc.k.last.step);
  }
  if (valid == 0) return Status::Ok();
  const size_t segments = spans.size();

  if (static_cast<size_t>(valid) <= max_points) {
    BATON_ASSIGN_OR_RETURN(int64_t running, TokensBefore(spans.front().first));
    for (const Span& sp : spans) {
      auto it = nodes_.lower_bound({kTop, RollupBlockOf(std::max<int64_t>(sp.first, 0), kTop)});
      std::vector<int64_t> blocks;
      for (; it != nodes_.end() && it->first.first == kTop; ++it) {
        if (RollupBlockFirstStep(it->first.second, kTop) > sp.last) break;
        blocks.push_back(it->first.second);
      }
      for (int64_t block : blocks) {
        BATON_RETURN_IF_ERROR(
            Enumerate(q, sp.attempt_id, kTop, block, sp.first, sp.last, &running, out));
      }
    }
    return Status::Ok();
  }

  // The downsampler's buckets (series_downsampler.cc), cell by cell.
  const size_t budget_cells = max_points / kPointsPerCell;
  const size_t buckets = budget_cells > segments ? budget_cells - segments : 1;
  const int64_t span = hi - lo + 1;
  const int64_t width = std::max<int64_t>(1, (span + int64_t(buckets) - 1) / int64_t(buckets));
  BATON_ASSIGN_OR_RETURN(int64_t running, TokensBefore(lo));
  for (const Span& sp : spans) {
    const int64_t a = std::max(sp.first, lo), b = std::min(sp.last, hi);
    if (a > b) continue;
    for (int64_t bucket = (a - lo) / width; bucket <= (b - lo) / width; ++bucket) {
      const int64_t ca = std::max(a, lo + bucket * width);
      const int64_t cb = std::min(b, lo + (bucket + 1) * width - 1);
      CellAcc acc;
      BATON_RETURN_IF_ERROR(Accumulate(q, sp.attempt_id, ca, cb, &acc));
      if (acc.k.count > 0) {
        RollupPoint cell[kPointsPerCell] = {acc.k.first, acc.k.min, acc.k.max, acc.k.last};
        std::sort(cell, cell + kPointsPerCell,
                  [](const RollupPoint& x, const RollupPoint& y) { return x.step < y.step; });
        for (size_t k = 0; k < kPointsPerCell; ++k) {
          if (k > 0 && cell[k].step == cell[k - 1].step) continue;
          out->push_back({cell[k].step, cell[k].value, sp.attempt_id,
                          running + cell[k].tokens_through, cell[k].time});
        }
      }
      running += acc.tokens;
    }
  }
  return Status::Ok();
}

}  // namespace baton
