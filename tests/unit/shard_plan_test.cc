// ShardPlan: whole-parameter ownership balanced by element count.
#include "trainer/distributed/shard_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace baton {
namespace {

TEST(ShardPlan, EveryParameterHasOneOwnerAndRangesAreContiguous) {
  const std::vector<int64_t> numels = {100, 10, 10, 300, 50, 50, 200, 80};
  for (int64_t w = 1; w <= 5; ++w) {
    const ShardPlan p = MakeShardPlan(numels, w);
    int64_t sum = 0;
    for (int64_t r = 0; r < w; ++r) {
      for (int64_t i = p.begin[r]; i < p.end[r]; ++i) EXPECT_EQ(p.owner[i], r);
      if (r > 0) {
        EXPECT_EQ(p.begin[r], p.end[r - 1]) << "w=" << w << " r=" << r;
      }
      sum += p.numel[r];
    }
    EXPECT_EQ(sum, 800);
    EXPECT_EQ(p.end[w - 1], int64_t(numels.size()));
    EXPECT_EQ(p.padded, *std::max_element(p.numel.begin(), p.numel.end()));
    for (size_t i = 1; i < numels.size(); ++i) EXPECT_LE(p.owner[i - 1], p.owner[i]);
  }
}

TEST(ShardPlan, ManyEqualParametersSplitEvenly) {
  const std::vector<int64_t> numels(120, 1000);  // like 30 blocks of 4 equal matrices
  const ShardPlan p = MakeShardPlan(numels, 8);
  for (int64_t r = 0; r < 8; ++r) EXPECT_EQ(p.numel[r], 15000) << r;
  EXPECT_EQ(p.offset[16], 1000);  // rank 1's second parameter
}

TEST(ShardPlan, MoreRanksThanParametersLeavesSomeEmpty) {
  const ShardPlan p = MakeShardPlan({5, 5}, 4);
  EXPECT_EQ(p.numel[0] + p.numel[1] + p.numel[2] + p.numel[3], 10);
  int64_t empty = 0;
  for (int64_t r = 0; r < 4; ++r) empty += p.numel[r] == 0;
  EXPECT_EQ(empty, 2);
}

TEST(ShardPlan, ReshapeKeepsOwnersInOtherUnits) {
  // A bf16 all-gather: parameters 1 and 3 stay float32 and travel as two bf16 halves each.
  const std::vector<int64_t> numels = {40, 3, 40, 5, 40};
  const ShardPlan p = MakeShardPlan(numels, 3);
  const ShardPlan q = ReshapeShardPlan(p, {40, 6, 40, 10, 40});
  EXPECT_EQ(q.owner, p.owner);
  EXPECT_EQ(q.begin, p.begin);
  EXPECT_EQ(q.end, p.end);
  EXPECT_EQ(q.total, 136);
  for (int64_t r = 0; r < 3; ++r) {
    int64_t sum = 0;
    for (int64_t i = q.begin[r]; i < q.end[r]; ++i) {
      EXPECT_EQ(q.offset[i], sum) << i;
      sum += std::vector<int64_t>{40, 6, 40, 10, 40}[size_t(i)];
    }
    EXPECT_EQ(q.numel[r], sum) << r;
  }
  EXPECT_EQ(q.padded, *std::max_element(q.numel.begin(), q.numel.end()));
}

}  // namespace
}  // namespace baton
