#include "orchestrator/http/series_downsampler.h"

#include <algorithm>
#include <cmath>

namespace baton {

namespace {

// Points one (segment, bucket) cell keeps: first, min, max, last.
constexpr size_t kPointsPerCell = 4;

}  // namespace

std::vector<size_t> DownsampleMinMax(const std::vector<int64_t>& step,
                                     const std::vector<double>& value,
                                     const std::vector<int64_t>& segment, size_t max_points) {
  const size_t n = std::min({step.size(), value.size(), segment.size()});
  std::vector<size_t> out;
  size_t valid = 0, segments = 0;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < n; ++i) {
    if (i == 0 || segment[i] != segment[i - 1]) ++segments;
    if (std::isnan(value[i])) continue;
    ++valid;
    lo = std::min(lo, step[i]);
    hi = std::max(hi, step[i]);
  }
  if (valid <= max_points) {
    out.reserve(valid);
    for (size_t i = 0; i < n; ++i) {
      if (!std::isnan(value[i])) out.push_back(i);
    }
    return out;
  }
  // A cell straddling an attempt boundary becomes two cells, so reserve room for one extra
  // cell per segment; the rest of the budget is spread over the step range.
  const size_t budget_cells = max_points / kPointsPerCell;
  const size_t buckets = budget_cells > segments ? budget_cells - segments : 1;
  const int64_t span = hi - lo + 1;
  const int64_t width = std::max<int64_t>(1, (span + int64_t(buckets) - 1) / int64_t(buckets));

  out.reserve(std::min(valid, max_points + kPointsPerCell * segments));
  size_t first = 0, last = 0, min_i = 0, max_i = 0;
  bool open = false;
  int64_t cell_segment = 0, cell_bucket = 0;
  auto flush = [&] {
    if (!open) return;
    size_t cell[kPointsPerCell] = {first, min_i, max_i, last};
    std::sort(cell, cell + kPointsPerCell);
    for (size_t k = 0; k < kPointsPerCell; ++k) {
      if (k == 0 || cell[k] != cell[k - 1]) out.push_back(cell[k]);
    }
    open = false;
  };
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(value[i])) continue;
    const int64_t bucket = (step[i] - lo) / width;
    if (!open || segment[i] != cell_segment || bucket != cell_bucket) {
      flush();
      open = true;
      cell_segment = segment[i];
      cell_bucket = bucket;
      first = last = min_i = max_i = i;
      continue;
    }
    last = i;
    if (value[i] < value[min_i]) min_i = i;
    if (value[i] > value[max_i]) max_i = i;
  }
  flush();
  return out;
}

}  // namespace baton
