// RollupSeriesReader's points: the downsampler's cells read from the nodes (the walks over nodes
// and rows are in series_rollup_reader.cc).
#include <algorithm>
#include <cmath>

#include "orchestrator/store/series_rollup_reader.h"

namespace baton {

namespace {

// Points a (attempt, bucket) cell keeps: first, min, max, last (series_downsampler.cc).
constexpr size_t kPointsPerCell = 4;

}  // namespace

Status RollupSeriesReader::Points(SeriesKey key, int64_t from, int64_t to, size_t max_points,
                                  std::vector<SeriesOutPoint>* out, int64_t* rows_in_range) {
  return PartPoints(attempts_, key, from, to, max_points, out, rows_in_range);
}

Status RollupSeriesReader::SupersededPoints(SeriesKey key, int64_t from, int64_t to,
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

Status RollupSeriesReader::PartPoints(const std::vector<RollupAttemptTotals>& part, SeriesKey key,
                                      int64_t from, int64_t to, size_t max_points,
                                      std::vector<SeriesOutPoint>* out, int64_t* rows_in_range) {
  out->clear();
  *rows_in_range = 0;
  const QKey q = Of(key);

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
