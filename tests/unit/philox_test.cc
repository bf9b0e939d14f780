#include "trainer/rng/philox.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace baton {
namespace {

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(PhiloxTest, KnownAnswerVectors) {
  EXPECT_EQ(PhiloxBlock({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(
      PhiloxBlock({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
      (std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(
      PhiloxBlock({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
      (std::array<uint32_t, 4>{0xd16cfe09u, 0x94fdcceb, 0x5001e420u, 0x24126ea1u}));
}

TEST(PhiloxTest, StreamsAreReproducibleAndDistinct) {
  RandomStream a(7, StreamTag::kEpisodeNoise, 3, 11), a2(7, StreamTag::kEpisodeNoise, 3, 11);
  RandomStream b(7, StreamTag::kEpisodeNoise, 3, 12), c(8, StreamTag::kEpisodeNoise, 3, 11);
  RandomStream d(7, StreamTag::kSynthData, 3, 11);
  std::vector<uint32_t> va, va2, vb, vc, vd;
  for (int i = 0; i < 64; ++i) {
    va.push_back(a.NextU32());
    va2.push_back(a2.NextU32());
    vb.push_back(b.NextU32());
    vc.push_back(c.NextU32());
    vd.push_back(d.NextU32());
  }
  EXPECT_EQ(va, va2);
  EXPECT_NE(va, vb);
  EXPECT_NE(va, vc);
  EXPECT_NE(va, vd);
}

TEST(PhiloxTest, UniformIntIsInRangeAndRoughlyUniform) {
  RandomStream r(1, StreamTag::kSamplerShuffle);
  constexpr int kBins = 7, kDraws = 70000;
  std::vector<int> counts(kBins, 0);
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t v = r.UniformInt(kBins);
    ASSERT_LT(v, uint64_t(kBins));
    ++counts[v];
  }
  // Chi-square with 6 degrees of freedom; 22.46 is the 0.999 quantile.
  double chi2 = 0;
  for (int c : counts) chi2 += (c - kDraws / kBins) * double(c - kDraws / kBins) / (kDraws / kBins);
  EXPECT_LT(chi2, 22.46);
}

TEST(PhiloxTest, NormalHasUnitMoments) {
  RandomStream r(2, StreamTag::kEpisodeNoise);
  double sum = 0, sq = 0;
  constexpr int kN = 200000;
  for (int i = 0; i < kN; ++i) {
    const double x = r.Normal();
    sum += x;
    sq += x * x;
  }
  EXPECT_NEAR(sum / kN, 0.0, 0.01);
  EXPECT_NEAR(sq / kN, 1.0, 0.01);
  double u_min = 1, u_max = 0;
  for (int i = 0; i < 10000; ++i) {
    const double u = r.Uniform();
    u_min = std::min(u_min, u);
    u_max = std::max(u_max, u);
  }
  EXPECT_GE(u_min, 0.0);
  EXPECT_LT(u_max, 1.0);
}

}  // namespace
}  // namespace baton
