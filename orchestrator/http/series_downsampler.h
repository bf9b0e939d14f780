// Min/max-preserving downsampling of one chart series (the series endpoint's max_points).
//
// Rows come grouped by segment (one segment = one attempt's rows, contiguous, in step order).
// The step range is cut into equal buckets; in every (segment, bucket) cell the first, the last,
// the minimum and the maximum row are kept (the M4 scheme), so spikes survive at any zoom and
// each attempt's first and last point are always kept — a resume boundary never blurs into its
// neighbour. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace baton {

// Indices (ascending) of the rows to keep. Rows whose value is NaN are never kept (a gap, not a
// point). At most max(max_points, 8 × segments) indices; all non-NaN rows when they fit.
std::vector<size_t> DownsampleMinMax(const std::vector<int64_t>& step,
                                     const std::vector<double>& value,
                                     const std::vector<int64_t>& segment, size_t max_points);

}  // namespace baton
