// The action side of upstream's per-sample transform, exactly (docs/lerobot_import.md): shift to
// the first sampled frame, the relative-pose rule, N = 4 * stride zero rows in front, the first
// F * N rows, the channel map, the quantile normaliser with its clip, and the mask. Computed in
// float64, stored as float32. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/lerobot/import_profile.h"

namespace baton {

// A check upstream asserts or skips, failed: `check` is the stable name the import report
// counts, `message` says what was found.
struct SegmentCheck {
  std::string check;
  std::string message;
};

struct SegmentActions {
  int64_t frames = 0;          // F
  int64_t steps = 0;           // N
  std::vector<float> actions;  // [action_dim, F, N]
  std::vector<float> mask;     // [action_dim, F, N], 0 or 1
};

// The F and stride implied by frame_ids, after the frame_ids checks (length >= 2, inside
// [start, end), constant positive stride, 4 * stride == action_per_frame).
bool CheckFrameIds(const ImportProfile& p, const std::vector<int64_t>& frame_ids, int64_t start,
                   int64_t end, int64_t* frames, int64_t* stride, SegmentCheck* failed);

// `rows` is the episode's action column, row-major [rows_count, width]; the segment reads rows
// [start, end). Returns false with *failed set when a check fails.
bool TransformActions(const ImportProfile& p, const std::vector<double>& rows, int64_t rows_count,
                      int64_t width, int64_t start, int64_t end,
                      const std::vector<int64_t>& frame_ids, SegmentActions* out,
                      SegmentCheck* failed);

}  // namespace baton
