#include "trainer/lerobot/action_transform.h"

#include <algorithm>
#include <cmath>

namespace baton {
namespace {

// Quaternions are scalar-last (x, y, z, w), as scipy's Rotation uses them.
struct Quat {
  double x, y, z, w;
};

Quat Normalised(Quat q) {
  const double n = std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
  return {q.x / n, q.y / n, q.z / n, q.w / n};
}

// Hamilton product a * b (apply b, then a), scalar-last.
Quat Mul(const Quat& a, const Quat& b) {
  return {
      a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y, a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
      a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w, a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z};
}

// Makes each relative pose column of the used rows relative to row `first`: position minus
// its position, rotation composed with its inverse rotation.
void MakePosesRelative(const ImportProfile& p, const std::vector<double>& rows, int64_t first,
                       int64_t width, int64_t used_rows, std::vector<double>& raw) {
  // No rows used (F = 1): nothing to make relative, and row `first` may not exist.
  for (int64_t c : used_rows > 0 ? p.relative_pose_columns : std::vector<int64_t>{}) {
    const double* r0 = &rows[size_t(first * width + c)];
    const Quat q0 = Normalised({r0[3], r0[4], r0[5], r0[6]});
    // scipy's Rotation.inv() negates w (not x, y, z): the same rotation, and the sign of every
    // relative quaternion upstream trained on.
    const Quat inv0{q0.x, q0.y, q0.z, -q0.w};
    const double p0[3] = {r0[0], r0[1], r0[2]};
    for (int64_t r = 0; r < used_rows; ++r) {
      double* v = &raw[size_t(r * width + c)];
      for (int k = 0; k < 3; ++k) v[k] -= p0[k];
      const Quat q = Mul(inv0, Normalised({v[3], v[4], v[5], v[6]}));
      v[3] = q.x;
      v[4] = q.y;
      v[5] = q.z;
      v[6] = q.w;
    }
  }
}

}  // namespace

bool CheckFrameIds(const ImportProfile& p, const std::vector<int64_t>& f, int64_t start,
                   int64_t end, int64_t* frames, int64_t* stride, SegmentCheck* failed) {
  if (f.size() < 2) {
    *failed = {"frame_ids_too_short",
               "frame_ids holds " + std::to_string(f.size()) + " frame(s); the stride needs 2"};
    return false;
  }
  // Every id inside the segment before any difference is taken: then no step overflows.
  for (size_t k = 0; k < f.size(); ++k) {
    if (f[k] < start || f[k] >= end) {
      *failed = {"frame_ids_out_of_range",
                 "frame_ids[" + std::to_string(k) + "] = " + std::to_string(f[k]) + " (span [" +
                     std::to_string(f.front()) + ", " + std::to_string(f.back()) +
                     "]) lies outside the segment [" + std::to_string(start) + ", " +
                     std::to_string(end) + ")"};
      return false;
    }
  }
  *stride = f[1] - f[0];
  for (size_t k = 1; k < f.size(); ++k) {
    if (f[k] - f[k - 1] != *stride || *stride <= 0) {
      *failed = {"stride_not_constant", "frame_ids step " + std::to_string(f[k] - f[k - 1]) +
                                            " at position " + std::to_string(k) + ", first step " +
                                            std::to_string(*stride)};
      return false;
    }
  }
  // action_per_frame is a multiple of 4 (the profile checks it); 4 * stride could overflow.
  if (*stride != p.action_per_frame / 4) {
    *failed = {"stride_mismatch", "4 x stride " + std::to_string(*stride) +
                                      " differs from the profile's action_per_frame " +
                                      std::to_string(p.action_per_frame)};
    return false;
  }
  *frames = (int64_t(f.size()) - 1) / 4 + 1;
  return true;
}

bool TransformActions(const ImportProfile& p, const std::vector<double>& rows, int64_t rows_count,
                      int64_t width, int64_t start, int64_t end,
                      const std::vector<int64_t>& frame_ids, SegmentActions* out,
                      SegmentCheck* failed) {
  int64_t F = 0, stride = 0;
  if (!CheckFrameIds(p, frame_ids, start, end, &F, &stride, failed)) return false;
  if (width != int64_t(p.used_action_channel_ids.size())) {
    *failed = {"action_width", "the action column holds " + std::to_string(width) +
                                   " values per row, used_action_channel_ids names " +
                                   std::to_string(p.used_action_channel_ids.size())};
    return false;
  }
  const int64_t N = 4 * stride;
  const int64_t shift = frame_ids.front() - start;
  // Upstream slices action[start:end] of the episode, then drops `shift` rows.
  const int64_t first = start + shift;
  const int64_t available = std::max<int64_t>(0, std::min(end, rows_count) - first);
  if (N + available < F * N) {
    *failed = {"too_few_action_rows",
               "the segment has " + std::to_string(available) + " action rows after the shift of " +
                   std::to_string(shift) + ", F * N = " + std::to_string(F * N) + " need " +
                   std::to_string((F - 1) * N) + " besides the " + std::to_string(N) +
                   " zero rows"};
    return false;
  }
  // Rows used: [first, first + (F - 1) * N), made relative to row `first` where the profile says.
  const int64_t used_rows = (F - 1) * N;
  std::vector<double> raw(rows.begin() + first * width, rows.begin() + (first + used_rows) * width);
  for (size_t k = 0; k < raw.size(); ++k) {
    if (!std::isfinite(raw[k])) {
      *failed = {"nonfinite_action", "action row " + std::to_string(first + int64_t(k) / width) +
                                         " column " + std::to_string(int64_t(k) % width) + " is " +
                                         std::to_string(raw[k])};
      return false;
    }
  }
  MakePosesRelative(p, rows, first, width, used_rows, raw);
  const std::vector<int64_t> inv = p.InverseChannels();
  out->frames = F;
  out->steps = N;
  out->actions.assign(size_t(p.action_dim * F * N), 0.0f);
  out->mask.assign(out->actions.size(), 0.0f);
  for (int64_t k = 0; k < F * N; ++k) {  // k = f * N + n
    const int64_t f = k / N, n = k % N;
    for (int64_t c = 0; c < p.action_dim; ++c) {
      if (inv[size_t(c)] < 0) continue;  // unused channel: masked, so 0
      // The first N rows are raw zeros, normalised like any other row.
      const double v = k < N ? 0.0 : raw[size_t((k - N) * width + inv[size_t(c)])];
      double a = (v - p.q01[size_t(c)]) / (p.q99[size_t(c)] - p.q01[size_t(c)] + 1e-6) * 2.0 - 1.0;
      a = std::clamp(a, -1.5, 1.5);
      const size_t at = size_t((c * F + f) * N + n);
      out->actions[at] = float(a);
      out->mask[at] = 1.0f;
    }
  }
  for (size_t k = 0; k < out->actions.size(); ++k) {
    if (!std::isfinite(out->actions[k])) {  // a zero quaternion normalises to NaN
      *failed = {"nonfinite_action", "the transform gives " + std::to_string(out->actions[k]) +
                                         " on channel " + std::to_string(int64_t(k) / (F * N)) +
                                         " (a zero-length quaternion?)"};
      return false;
    }
  }
  return true;
}

}  // namespace baton
