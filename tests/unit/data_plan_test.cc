#include "trainer/data/data_plan.h"

#include <gtest/gtest.h>

#include <map>

#include "trainer/rng/philox.h"

namespace baton {
namespace {

std::vector<int64_t> Lengths(int64_t n) {
  RandomStream r(3, StreamTag::kSynthData, 1);
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(10 + int64_t(r.UniformInt(50)));
  return v;
}

SamplerOptions Opts(int64_t world) {
  SamplerOptions o;
  o.batch_size = 4;
  o.world_size = world;
  o.pool_factor = 3;
  o.seed = 9;
  return o;
}

TEST(DataPlanTest, WithoutTransitionItIsTheSamplerPlanEpochAfterEpoch) {
  const auto lengths = Lengths(100);
  DataPlan plan(lengths, Opts(2));
  const int64_t bpe = LengthBucketBatchSampler::BatchesPerEpoch(100, Opts(2));
  SamplerOptions r1 = Opts(2);
  r1.rank = 1;
  EXPECT_EQ(plan.Batch(1, bpe + 3), LengthBucketBatchSampler::Plan(lengths, r1, 1).batch(3));
  EXPECT_EQ(plan.Position(bpe + 3), std::make_pair(int64_t(1), int64_t(3)));
}

// Reshard mid-epoch (2 -> 3 ranks, then 3 -> 1): the epoch's episodes are each trained once,
// apart from the tail padding, and the next epoch is the new world's ordinary plan.
TEST(DataPlanTest, ReshardKeepsTheEpochsGlobalPosition) {
  const auto lengths = Lengths(101);
  DataPlan two(lengths, Opts(2));
  const int64_t bpe2 = LengthBucketBatchSampler::BatchesPerEpoch(101, Opts(2));  // 13
  const int64_t done = bpe2 + 5;                                                 // epoch 1, batch 5
  std::map<int64_t, int> seen;
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t k = bpe2; k < done; ++k) {
      for (int64_t e : two.Batch(r, k)) ++seen[e];
    }
  }
  int64_t repeated = 0;
  DataPlan three = two.Reshard(done, 3, &repeated);
  ASSERT_FALSE(three.transition().empty());
  EXPECT_EQ(three.transition().epoch, 1);
  const int64_t rest = 2 * (bpe2 - 5);  // 16 batches left -> 6 per rank, 2 padding batches
  const int64_t t = int64_t(three.transition().batches[0].size());
  EXPECT_EQ(t, (rest + 2) / 3);
  EXPECT_EQ(repeated, 3 * t - rest);
  // Half-way through the transition epoch, go to 1 rank.
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t k = 0; k < 2; ++k) {
      for (int64_t e : three.Batch(r, k)) ++seen[e];
    }
  }
  DataPlan one = three.Reshard(2, 1);
  EXPECT_EQ(one.Position(0).first, 1);
  const int64_t t1 = int64_t(one.transition().batches[0].size());
  for (int64_t k = 0; k < t1; ++k) {
    for (int64_t e : one.Batch(0, k)) ++seen[e];
  }
  // Every episode of epoch 1 exactly once, except the padding of the plan (to 104 episodes) and
  // the 2 padding batches of the first reshard (8 episodes).
  EXPECT_EQ(seen.size(), lengths.size());
  int64_t extra = 0;
  for (const auto& [e, c] : seen) extra += c - 1;
  EXPECT_EQ(extra, (104 - 101) + 4 * repeated);
  // After the transition epoch comes epoch 2 of the 1-rank plan.
  EXPECT_EQ(one.Position(t1), std::make_pair(int64_t(2), int64_t(0)));
  EXPECT_EQ(one.Batch(0, t1), LengthBucketBatchSampler::Plan(lengths, Opts(1), 2).batch(0));
  // The transition survives a checkpoint round trip.
  const PlanTransition back = PlanTransition::FromJson(one.transition().ToJson());
  EXPECT_EQ(back.epoch, one.transition().epoch);
  EXPECT_EQ(back.batches, one.transition().batches);
  EXPECT_TRUE(PlanTransition::FromJson(nullptr).empty());
}

TEST(DataPlanTest, ReshardAtAnEpochBoundaryNeedsNoTransition) {
  const auto lengths = Lengths(64);
  DataPlan two(lengths, Opts(2));
  const int64_t bpe2 = LengthBucketBatchSampler::BatchesPerEpoch(64, Opts(2));
  DataPlan four = two.Reshard(2 * bpe2, 4);
  EXPECT_TRUE(four.transition().empty());
  EXPECT_EQ(four.Position(0), std::make_pair(int64_t(2), int64_t(0)));
}

}  // namespace
}  // namespace baton
