// PackedLayout: where every token of a packed micro-batch sits, and what it may attend to.
//
// One packed row holds a batch's episodes as [noisy video | clean video | noisy action |
// clean action]; each segment is ordered sample -> frame -> patch (row-major) or sub-step. Tokens
// of padded frames (f >= frames of their sample) get seq_id -1 and take part in nothing.
// Per token the layout records seq_id, noisy/clean, frame_id (2*(f // chunk) for video,
// 2*(f // chunk) + 1 for actions, chunk drawn per episode) and 3-axis RoPE positions that restart
// at 0 in every sample (an action sub-step n, 0-based, of frame f sits at f + (n+1)/(N+1),
// h = w = -1, as upstream).
//
// It also plans the block-sparse self-attention: per sample, one query group per valid frame
// (all 2P + 2N tokens of that frame) and the keys that group can possibly see: clean tokens of
// the chunks within the window back to the frame's own chunk, plus the noisy tokens of its own
// chunk. Work therefore grows with tokens x window, not tokens^2; the exact mask rule
// (MaskAllows, docs/model.md) is applied inside each group. Torch-free; built once per micro-step
// and shared by all layers.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace baton {

// What the mask rule needs to know about one token.
struct MaskToken {
  int32_t seq_id = -1;   // sample in the row; -1 for a token of a padded frame
  bool clean = false;    // a clean (ground-truth) copy, else noisy
  int32_t frame_id = 0;  // 2 * chunk for video, 2 * chunk + 1 for actions
};

// The attention mask rule (docs/model.md, "The attention mask"): may query q attend to key k,
// `window` being the query's sample's window in frame-id units. Every attention path takes its
// mask from this one function, so the block-sparse path and the dense oracle cannot disagree on
// the rule. Pure.
inline bool MaskAllows(const MaskToken& q, const MaskToken& k, int32_t window) {
  if (q.seq_id < 0 || q.seq_id != k.seq_id) return false;
  if (std::abs(q.frame_id - k.frame_id) > window) return false;
  if (q.clean) return k.clean && k.frame_id <= q.frame_id;  // clean -> clean, own block included
  if (k.clean) return k.frame_id < q.frame_id;              // noisy -> clean, strictly earlier
  return k.frame_id == q.frame_id;                          // noisy -> noisy, own block only
}

struct SampleSpec {
  int64_t frames = 0;  // valid latent frames F_b (<= Fp)
  int64_t chunk = 1;   // latent frames per attention chunk
  int64_t window = 0;  // attention window in frame-id units
};

// The self-attention work of one sample: `groups` query groups of `lq` tokens each, and for
// each group `lk` key slots (token index or -1 for an empty slot), row-major.
struct SampleAttention {
  int64_t sample = 0;
  int64_t window = 0;
  int64_t groups = 0;
  int64_t lq = 0;
  int64_t lk = 0;
  std::vector<int64_t> queries;  // [groups * lq]
  std::vector<int64_t> keys;     // [groups * lk], -1 = empty slot
};

struct PackedLayout {
  int64_t batch = 0, padded_frames = 0;                      // B, Fp
  int64_t patch_rows = 0, patch_cols = 0, action_steps = 0;  // Hp, Wp, N
  int64_t video_tokens = 0;                                  // per segment: B * Fp * Hp * Wp
  int64_t action_tokens = 0;                                 // per segment: B * Fp * N
  int64_t tokens = 0;  // T = 2 * video_tokens + 2 * action_tokens

  std::vector<int32_t> seq_id;             // [T], -1 for padded frames
  std::vector<uint8_t> clean;              // [T], 1 for clean copies
  std::vector<int32_t> frame_id;           // [T]
  std::vector<int32_t> window;             // [T], the window of the token's sample
  std::vector<float> pos_f, pos_h, pos_w;  // [T] RoPE positions
  std::vector<SampleSpec> samples;
  std::vector<SampleAttention> attention;  // one per sample

  int64_t patches() const { return patch_rows * patch_cols; }
  int64_t noisy_video_begin() const { return 0; }
  int64_t clean_video_begin() const { return video_tokens; }
  int64_t noisy_action_begin() const { return 2 * video_tokens; }
  int64_t clean_action_begin() const { return 2 * video_tokens + action_tokens; }
  int64_t VideoToken(bool is_clean, int64_t b, int64_t f, int64_t patch) const {
    return (is_clean ? video_tokens : 0) + (b * padded_frames + f) * patches() + patch;
  }
  int64_t ActionToken(bool is_clean, int64_t b, int64_t f, int64_t n) const {
    return 2 * video_tokens + (is_clean ? action_tokens : 0) +
           (b * padded_frames + f) * action_steps + n;
  }
  MaskToken mask_token(int64_t t) const { return {seq_id[t], clean[t] != 0, frame_id[t]}; }
  // Tokens of valid frames (the ones that take part in attention).
  int64_t valid_tokens() const;
  // Score entries the block-sparse path computes (sum of groups * lq * lk).
  int64_t computed_pairs() const;
};

PackedLayout BuildPackedLayout(int64_t padded_frames, int64_t patch_rows, int64_t patch_cols,
                               int64_t action_steps, const std::vector<SampleSpec>& samples);

// MaskAllows for two tokens of the layout, with the query's window.
inline bool AttentionAllowed(const PackedLayout& layout, int64_t q, int64_t k) {
  return MaskAllows(layout.mask_token(q), layout.mask_token(k), layout.window[q]);
}

}  // namespace baton
