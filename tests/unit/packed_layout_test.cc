#include "trainer/model/packed_layout.h"

#include <gtest/gtest.h>

#include <set>

namespace baton {
namespace {

// Every allowed pair of the exact rule lies inside the block-sparse plan, and every valid token
// is the query of exactly one group: the sparse path can compute everything the rule allows.
TEST(PackedLayoutTest, SparsePlanCoversEveryAllowedPair) {
  const std::vector<SampleSpec> specs = {{5, 2, 3}, {7, 1, 4}, {3, 3, 0}, {6, 4, 9}};
  const PackedLayout l = BuildPackedLayout(/*Fp=*/8, 2, 2, 3, specs);
  EXPECT_EQ(l.tokens, 2 * 4 * 8 * 4 + 2 * 4 * 8 * 3);
  std::vector<int> query_groups(l.tokens, 0);
  std::set<std::pair<int64_t, int64_t>> planned;
  for (const auto& a : l.attention) {
    for (int64_t g = 0; g < a.groups; ++g) {
      for (int64_t i = 0; i < a.lq; ++i) {
        const int64_t q = a.queries[g * a.lq + i];
        ++query_groups[q];
        for (int64_t j = 0; j < a.lk; ++j) {
          const int64_t k = a.keys[g * a.lk + j];
          if (k >= 0) planned.insert({q, k});
        }
      }
    }
  }
  int64_t allowed = 0;
  for (int64_t q = 0; q < l.tokens; ++q) {
    EXPECT_EQ(query_groups[q], l.seq_id[q] >= 0 ? 1 : 0) << "token " << q;
    for (int64_t k = 0; k < l.tokens; ++k) {
      if (!AttentionAllowed(l, q, k)) continue;
      ++allowed;
      EXPECT_TRUE(planned.count({q, k})) << q << " -> " << k;
    }
  }
  EXPECT_GT(allowed, 0);
  EXPECT_LE(allowed, l.computed_pairs());
  EXPECT_EQ(l.valid_tokens(), (5 + 7 + 3 + 6) * 2 * (4 + 3));
}

TEST(PackedLayoutTest, MaskRuleOnLayoutTokens) {
  // One sample, chunk 1: video frame f has frame_id 2f, its actions 2f + 1.
  const PackedLayout l = BuildPackedLayout(4, 1, 1, 1, {{4, 1, 64}});
  auto nv = [&](int64_t f) { return l.VideoToken(false, 0, f, 0); };
  auto cv = [&](int64_t f) { return l.VideoToken(true, 0, f, 0); };
  auto na = [&](int64_t f) { return l.ActionToken(false, 0, f, 0); };
  auto ca = [&](int64_t f) { return l.ActionToken(true, 0, f, 0); };
  EXPECT_TRUE(AttentionAllowed(l, cv(2), cv(2)));   // clean sees own block
  EXPECT_TRUE(AttentionAllowed(l, cv(2), ca(1)));   // and earlier clean
  EXPECT_FALSE(AttentionAllowed(l, cv(2), ca(2)));  // not later clean
  EXPECT_FALSE(AttentionAllowed(l, cv(2), nv(2)));  // clean never sees noisy
  EXPECT_TRUE(AttentionAllowed(l, nv(2), ca(1)));   // noisy sees strictly earlier clean
  EXPECT_FALSE(AttentionAllowed(l, nv(2), cv(2)));
  EXPECT_TRUE(AttentionAllowed(l, nv(2), nv(2)));   // noisy sees own noisy block
  EXPECT_FALSE(AttentionAllowed(l, nv(2), na(2)));  // other noisy block (action fid 5)
  EXPECT_TRUE(AttentionAllowed(l, na(2), cv(2)));   // noisy actions of chunk k see clean video of k
  EXPECT_FALSE(AttentionAllowed(l, na(2), ca(2)));
  // Positions: action sub-step n of frame f sits at f + (n+1)/(N+1), h = w = -1; clean copies
  // reuse them. With N = 1 the only sub-step is at f + 1/2.
  EXPECT_FLOAT_EQ(l.pos_f[na(2)], 2.5f);
  EXPECT_FLOAT_EQ(l.pos_h[na(2)], -1.0f);
  EXPECT_EQ(l.pos_f[cv(3)], l.pos_f[nv(3)]);
}

TEST(PackedLayoutTest, PaddedFramesTakePartInNothingAndPositionsRestartPerSample) {
  const PackedLayout l = BuildPackedLayout(4, 1, 2, 1, {{2, 1, 8}, {4, 1, 8}});
  const int64_t pad = l.VideoToken(false, 0, 3, 0);
  EXPECT_EQ(l.seq_id[pad], -1);
  for (int64_t k = 0; k < l.tokens; ++k) {
    EXPECT_FALSE(AttentionAllowed(l, pad, k));
    EXPECT_FALSE(AttentionAllowed(l, k, pad));
  }
  EXPECT_EQ(l.pos_f[l.VideoToken(false, 1, 0, 1)], 0.0f);
  EXPECT_EQ(l.pos_w[l.VideoToken(false, 1, 0, 1)], 1.0f);
  // Different samples never interact.
  EXPECT_FALSE(AttentionAllowed(l, l.VideoToken(true, 1, 1, 0), l.VideoToken(true, 0, 0, 0)));
}

// Upstream's get_mesh_id: `ones(N).cumsum / (N + 1)`, so sub-step n (0-based) of latent frame f
// is at f + (n + 1) / (N + 1): never on the frame's own video position f, never on f + 1.
TEST(PackedLayoutTest, ActionSubStepPositionsMatchUpstream) {
  const int64_t N = 3;
  const PackedLayout l = BuildPackedLayout(2, 1, 1, N, {{2, 1, 8}});
  for (int64_t f = 0; f < 2; ++f) {
    for (int64_t n = 0; n < N; ++n) {
      const float want = float(f) + float(n + 1) / float(N + 1);
      EXPECT_FLOAT_EQ(l.pos_f[l.ActionToken(false, 0, f, n)], want) << "f " << f << " n " << n;
      EXPECT_FLOAT_EQ(l.pos_f[l.ActionToken(true, 0, f, n)], want);
    }
  }
}

}  // namespace
}  // namespace baton
