#include "trainer/model/packed_layout.h"

#include <algorithm>

namespace baton {

int64_t PackedLayout::valid_tokens() const {
  int64_t n = 0;
  for (const auto& s : samples) n += s.frames * 2 * (patches() + action_steps);
  return n;
}

int64_t PackedLayout::computed_pairs() const {
  int64_t n = 0;
  for (const auto& a : attention) n += a.groups * a.lq * a.lk;
  return n;
}

namespace {

// Sample b's token metadata: sequence, clean/noisy, frame ids, window and 3-D positions.
void FillSampleTokens(PackedLayout& l, int64_t b, const SampleSpec& s) {
  const int64_t Fp = l.padded_frames, Wp = l.patch_cols, N = l.action_steps;
  const int64_t P = l.patches();
  for (int64_t f = 0; f < Fp; ++f) {
    const bool valid = f < s.frames;
    const int32_t chunk_id = static_cast<int32_t>(f / s.chunk);
    for (int is_clean = 0; is_clean < 2; ++is_clean) {
      for (int64_t p = 0; p < P; ++p) {
        const size_t t = static_cast<size_t>(l.VideoToken(is_clean, b, f, p));
        l.seq_id[t] = valid ? static_cast<int32_t>(b) : -1;
        l.clean[t] = static_cast<uint8_t>(is_clean);
        l.frame_id[t] = 2 * chunk_id;
        l.window[t] = static_cast<int32_t>(s.window);
        l.pos_f[t] = static_cast<float>(f);
        l.pos_h[t] = static_cast<float>(p / Wp);
        l.pos_w[t] = static_cast<float>(p % Wp);
      }
      for (int64_t n = 0; n < N; ++n) {
        const size_t t = static_cast<size_t>(l.ActionToken(is_clean, b, f, n));
        l.seq_id[t] = valid ? static_cast<int32_t>(b) : -1;
        l.clean[t] = static_cast<uint8_t>(is_clean);
        l.frame_id[t] = 2 * chunk_id + 1;
        l.window[t] = static_cast<int32_t>(s.window);
        l.pos_f[t] = static_cast<float>(f) + static_cast<float>(n + 1) / static_cast<float>(N + 1);
        l.pos_h[t] = -1.0f;
        l.pos_w[t] = -1.0f;
      }
    }
  }
}

// Block-sparse plan. A key chunk c' can matter to query chunk c only if the closest frame ids
// are within the window: 2 * (c - c') - 1 <= window, i.e. c - c' <= (window + 1) / 2.
SampleAttention PlanSampleAttention(const PackedLayout& l, int64_t b, const SampleSpec& s) {
  const int64_t P = l.patches(), N = l.action_steps;
  SampleAttention a;
  a.sample = b;
  a.window = s.window;
  a.groups = s.frames;
  a.lq = 2 * (P + N);
  if (s.frames == 0) return a;
  const int64_t back = (s.window + 1) / 2;
  auto chunk_keys = [&](int64_t c, bool is_clean, std::vector<int64_t>& out) {
    const int64_t f_end = std::min(s.frames, (c + 1) * s.chunk);
    for (int64_t f = c * s.chunk; f < f_end; ++f) {
      for (int64_t p = 0; p < P; ++p) out.push_back(l.VideoToken(is_clean, b, f, p));
      for (int64_t n = 0; n < N; ++n) out.push_back(l.ActionToken(is_clean, b, f, n));
    }
  };
  std::vector<std::vector<int64_t>> keys(static_cast<size_t>(s.frames));
  for (int64_t f = 0; f < s.frames; ++f) {
    const int64_t c = f / s.chunk;
    if (f % s.chunk != 0) {  // every frame of a chunk shares its key set
      keys[f] = keys[f - 1];
      continue;
    }
    for (int64_t cc = std::max<int64_t>(0, c - back); cc <= c; ++cc) chunk_keys(cc, true, keys[f]);
    chunk_keys(c, false, keys[f]);
    a.lk = std::max<int64_t>(a.lk, static_cast<int64_t>(keys[f].size()));
  }
  a.queries.reserve(static_cast<size_t>(a.groups * a.lq));
  a.keys.assign(static_cast<size_t>(a.groups * a.lk), -1);
  for (int64_t f = 0; f < s.frames; ++f) {
    for (int is_clean = 0; is_clean < 2; ++is_clean) {
      for (int64_t p = 0; p < P; ++p) a.queries.push_back(l.VideoToken(is_clean, b, f, p));
      for (int64_t n = 0; n < N; ++n) a.queries.push_back(l.ActionToken(is_clean, b, f, n));
    }
    std::copy(keys[f].begin(), keys[f].end(), a.keys.begin() + f * a.lk);
  }
  return a;
}

}  // namespace

PackedLayout BuildPackedLayout(int64_t Fp, int64_t Hp, int64_t Wp, int64_t N,
                               const std::vector<SampleSpec>& samples) {
  PackedLayout l;
  l.batch = static_cast<int64_t>(samples.size());
  l.padded_frames = Fp;
  l.patch_rows = Hp;
  l.patch_cols = Wp;
  l.action_steps = N;
  l.samples = samples;
  const int64_t P = Hp * Wp, B = l.batch;
  l.video_tokens = B * Fp * P;
  l.action_tokens = B * Fp * N;
  l.tokens = 2 * l.video_tokens + 2 * l.action_tokens;
  const size_t T = static_cast<size_t>(l.tokens);
  l.seq_id.assign(T, -1);
  l.clean.assign(T, 0);
  l.frame_id.assign(T, 0);
  l.window.assign(T, 0);
  l.pos_f.assign(T, 0.0f);
  l.pos_h.assign(T, 0.0f);
  l.pos_w.assign(T, 0.0f);

  for (int64_t b = 0; b < B; ++b) FillSampleTokens(l, b, samples[static_cast<size_t>(b)]);
  for (int64_t b = 0; b < B; ++b) {
    l.attention.push_back(PlanSampleAttention(l, b, samples[static_cast<size_t>(b)]));
  }
  return l;
}

}  // namespace baton
