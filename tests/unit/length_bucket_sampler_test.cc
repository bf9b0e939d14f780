#include "trainer/data/length_bucket_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "trainer/rng/philox.h"

namespace baton {
namespace {

std::vector<int64_t> RandomLengths(int64_t n, int64_t lo, int64_t hi, uint64_t seed) {
  RandomStream r(seed, StreamTag::kSynthData, 99);
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(lo + int64_t(r.UniformInt(uint64_t(hi - lo + 1))));
  return v;
}

SamplerOptions Opts(int64_t batch, int64_t world, int64_t rank, SamplerPlan plan,
                    int64_t pool = 50) {
  SamplerOptions o;
  o.batch_size = batch;
  o.world_size = world;
  o.rank = rank;
  o.pool_factor = pool;
  o.seed = 1234;
  o.plan = plan;
  return o;
}

class SamplerPlanTest : public ::testing::TestWithParam<SamplerPlan> {};

TEST_P(SamplerPlanTest, EveryRankGetsTheSameNumberOfFullBatches) {
  const auto lengths = RandomLengths(1270, 103, 362, 1);
  for (int64_t world : {1, 3, 8}) {
    for (int64_t batch : {1, 4, 5}) {
      int64_t expected = -1;
      for (int64_t r = 0; r < world; ++r) {
        const EpochPlan p =
            LengthBucketBatchSampler::Plan(lengths, Opts(batch, world, r, GetParam()), 0);
        if (expected < 0) expected = p.num_batches();
        EXPECT_EQ(p.num_batches(), expected) << "world " << world << " rank " << r;
        for (int64_t b = 0; b < p.num_batches(); ++b) {
          EXPECT_EQ(p.offsets[b + 1] - p.offsets[b], batch);
        }
      }
      EXPECT_EQ(expected, (1270 + world * batch - 1) / (world * batch));
      EXPECT_EQ(expected,
                LengthBucketBatchSampler::BatchesPerEpoch(1270, Opts(batch, world, 0, GetParam())));
    }
  }
}

TEST_P(SamplerPlanTest, AllRanksTogetherCoverEveryEpisodeDuplicatesOnlyFromTailPadding) {
  const auto lengths = RandomLengths(1270, 103, 362, 2);
  const int64_t world = 8, batch = 4;
  for (int64_t epoch : {0, 1, 5}) {
    std::map<int64_t, int> seen;
    int64_t total = 0;
    for (int64_t r = 0; r < world; ++r) {
      const EpochPlan p =
          LengthBucketBatchSampler::Plan(lengths, Opts(batch, world, r, GetParam()), epoch);
      for (int64_t i : p.indices) {
        ++seen[i];
        ++total;
      }
    }
    EXPECT_EQ(seen.size(), lengths.size()) << "every episode appears";
    EXPECT_EQ(total, 1280) << "padded to a multiple of world * batch";
    int64_t extra = 0;
    for (const auto& [i, c] : seen) {
      EXPECT_LE(c, 2);
      extra += c - 1;
    }
    EXPECT_EQ(extra, 1280 - 1270) << "duplicates are exactly the tail padding";
  }
}

TEST_P(SamplerPlanTest, EpochsDifferAndAreReproducible) {
  const auto lengths = RandomLengths(500, 10, 300, 3);
  const auto o = Opts(4, 2, 1, GetParam());
  const EpochPlan e0 = LengthBucketBatchSampler::Plan(lengths, o, 0);
  const EpochPlan e0_again = LengthBucketBatchSampler::Plan(lengths, o, 0);
  const EpochPlan e1 = LengthBucketBatchSampler::Plan(lengths, o, 1);
  EXPECT_EQ(e0.indices, e0_again.indices);
  EXPECT_NE(e0.indices, e1.indices);
  auto other_seed = o;
  other_seed.seed = 4321;
  EXPECT_NE(LengthBucketBatchSampler::Plan(lengths, other_seed, 0).indices, e0.indices);
}

TEST_P(SamplerPlanTest, CursorSavedMidEpochReproducesTheRestExactly) {
  const auto lengths = RandomLengths(300, 10, 300, 4);
  auto made_a = LengthBucketBatchSampler::Create(lengths, Opts(4, 2, 0, GetParam(), 5));
  ASSERT_TRUE(made_a.ok()) << made_a.status().ToString();
  LengthBucketBatchSampler& a = made_a.value();
  const int64_t per_epoch = a.batches_per_epoch();
  for (int64_t i = 0; i < per_epoch + 7; ++i) a.Next();  // into epoch 1
  const SamplerCursor saved = a.state();
  EXPECT_EQ(saved, (SamplerCursor{1, 7}));
  std::vector<std::vector<int64_t>> rest_a;
  for (int64_t i = 0; i < 2 * per_epoch; ++i) rest_a.push_back(a.Next());

  auto made_b = LengthBucketBatchSampler::Create(lengths, Opts(4, 2, 0, GetParam(), 5));
  ASSERT_TRUE(made_b.ok()) << made_b.status().ToString();
  LengthBucketBatchSampler& b = made_b.value();
  ASSERT_TRUE(b.load_state(saved).ok());
  std::vector<std::vector<int64_t>> rest_b;
  for (int64_t i = 0; i < 2 * per_epoch; ++i) rest_b.push_back(b.Next());
  EXPECT_EQ(rest_a, rest_b);
  EXPECT_EQ(a.state(), b.state());
  EXPECT_EQ(b.Peek(b.state()), a.Next());
  const SamplerCursor before = b.state();
  const Status past = b.load_state({0, per_epoch + 1});
  EXPECT_EQ(past.code(), Code::kInvalidArgument);
  EXPECT_NE(past.message().find("outside an epoch of " + std::to_string(per_epoch)),
            std::string::npos)
      << past.ToString();
  EXPECT_EQ(b.state(), before);  // unchanged by the refused cursor
}

TEST_P(SamplerPlanTest, BatchesComeFromLengthSortedPools) {
  const auto lengths = RandomLengths(1270, 103, 362, 5);
  const EpochPlan bucketed =
      LengthBucketBatchSampler::Plan(lengths, Opts(4, 8, 0, GetParam(), 50), 0);
  // Per-rank pools of one batch do no bucketing (global pools of one batch per rank still do).
  const EpochPlan unbucketed =
      LengthBucketBatchSampler::Plan(lengths, Opts(4, 8, 0, SamplerPlan::kPerRank, 1), 0);
  auto mean_spread = [&](const EpochPlan& p) {
    double s = 0;
    for (int64_t b = 0; b < p.num_batches(); ++b) {
      int64_t lo = 1 << 30, hi = 0;
      for (int64_t i = p.offsets[b]; i < p.offsets[b + 1]; ++i) {
        lo = std::min(lo, lengths[p.indices[i]]);
        hi = std::max(hi, lengths[p.indices[i]]);
      }
      s += double(hi - lo);
    }
    return s / double(p.num_batches());
  };
  EXPECT_LT(mean_spread(bucketed), 8.0);
  EXPECT_GT(mean_spread(unbucketed), 80.0);
}

INSTANTIATE_TEST_SUITE_P(Plans, SamplerPlanTest,
                         ::testing::Values(SamplerPlan::kGlobal, SamplerPlan::kPerRank),
                         [](const auto& info) { return std::string(Name(info.param)); });

TEST(SamplerTest, TinyDatasetsWrapAroundToFillEveryRank) {
  const std::vector<int64_t> lengths = {5, 9, 7};
  for (SamplerPlan plan : {SamplerPlan::kGlobal, SamplerPlan::kPerRank}) {
    std::map<int64_t, int> seen;
    for (int64_t r = 0; r < 4; ++r) {
      const EpochPlan p = LengthBucketBatchSampler::Plan(lengths, Opts(2, 4, r, plan), 0);
      ASSERT_EQ(p.num_batches(), 1);
      for (int64_t i : p.indices) ++seen[i];
    }
    EXPECT_EQ(seen.size(), 3u);
  }
}

TEST(SamplerTest, RejectsBadOptions) {
  auto refused = [](std::vector<int64_t> lengths, const SamplerOptions& o) {
    const int64_t n = static_cast<int64_t>(lengths.size());
    auto made = LengthBucketBatchSampler::Create(std::move(lengths), o);
    EXPECT_FALSE(made.ok());
    if (made.ok()) return std::string();
    EXPECT_EQ(made.status().code(), Code::kInvalidArgument);
    // The planner's own check says the same.
    EXPECT_EQ(LengthBucketBatchSampler::CheckOptions(n, o).message(), made.status().message());
    return made.status().message();
  };
  EXPECT_NE(refused({1, 2}, Opts(0, 1, 0, SamplerPlan::kGlobal)).find("batch_size must be >= 1"),
            std::string::npos);
  EXPECT_NE(refused({1, 2}, Opts(1, 2, 2, SamplerPlan::kGlobal)).find("rank 2 is outside"),
            std::string::npos);
  EXPECT_NE(refused({}, Opts(1, 1, 0, SamplerPlan::kGlobal)).find("no episodes"),
            std::string::npos);
  EXPECT_TRUE(LengthBucketBatchSampler::Create({1, 2}, Opts(1, 2, 1, SamplerPlan::kGlobal)).ok());
}

}  // namespace
}  // namespace baton
