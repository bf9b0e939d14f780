#include "trainer/model/attention_plan.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace baton {
namespace {

// Four samples of different lengths, chunks and windows, with padded frames.
PackedLayout Mixed() {
  return BuildPackedLayout(8, 2, 2, 2, {{5, 2, 3}, {8, 1, 6}, {3, 3, 1}, {6, 4, 9}});
}

// Every group of the layout appears in exactly one bucket, with its queries and its keys in order
// and only empty slots added.
void ExpectSameGroups(const PackedLayout& l, const AttentionPlan& plan) {
  std::map<std::vector<int64_t>, std::vector<int64_t>> layout_groups, plan_groups;
  for (const auto& a : l.attention) {
    for (int64_t g = 0; g < a.groups; ++g) {
      std::vector<int64_t> q(a.queries.begin() + g * a.lq, a.queries.begin() + (g + 1) * a.lq);
      std::vector<int64_t> k;
      for (int64_t j = 0; j < a.lk; ++j) {
        if (a.keys[g * a.lk + j] >= 0) k.push_back(a.keys[g * a.lk + j]);
      }
      layout_groups[q] = k;
    }
  }
  int64_t groups = 0;
  for (const auto& b : plan.buckets) {
    ASSERT_EQ(static_cast<int64_t>(b.queries.size()), b.groups * b.lq);
    ASSERT_EQ(static_cast<int64_t>(b.keys.size()), b.groups * b.lk);
    for (int64_t g = 0; g < b.groups; ++g) {
      std::vector<int64_t> q(b.queries.begin() + g * b.lq, b.queries.begin() + (g + 1) * b.lq);
      std::vector<int64_t> k;
      bool empty_seen = false;
      for (int64_t j = 0; j < b.lk; ++j) {
        const int64_t key = b.keys[g * b.lk + j];
        if (key < 0) {
          empty_seen = true;
          continue;
        }
        EXPECT_FALSE(empty_seen) << "empty slots only at the end of a group";
        k.push_back(key);
      }
      EXPECT_TRUE(plan_groups.emplace(q, k).second) << "a group planned twice";
      ++groups;
    }
  }
  EXPECT_EQ(plan_groups, layout_groups);
}

TEST(AttentionPlanTest, BucketsHoldEveryGroupOnceAtAnyCallCost) {
  const PackedLayout l = Mixed();
  std::set<int64_t> key_counts;
  for (const auto& a : l.attention) {
    for (int64_t g = 0; g < a.groups; ++g) {
      int64_t n = 0;
      for (int64_t j = 0; j < a.lk; ++j) n += a.keys[g * a.lk + j] >= 0;
      key_counts.insert(n);
    }
  }
  const AttentionPlan exact = PlanAttention(l, 0);
  ExpectSameGroups(l, exact);
  // No call cost: one bucket per distinct key count, no padding at all.
  EXPECT_EQ(exact.calls(), static_cast<int64_t>(key_counts.size()));
  int64_t used = 0;
  for (const auto& b : exact.buckets) {
    for (int64_t key : b.keys) used += key >= 0;
  }
  EXPECT_EQ(exact.computed_pairs(), used * l.attention[0].lq);
  EXPECT_LE(exact.computed_pairs(), l.computed_pairs());

  // A prohibitive call cost: one call for the whole row, padded to the largest key count.
  const AttentionPlan one = PlanAttention(l, int64_t(1) << 40);
  ExpectSameGroups(l, one);
  ASSERT_EQ(one.calls(), 1);
  EXPECT_EQ(one.buckets[0].lk, *key_counts.rbegin());

  // The default sits in between and never costs more than either extreme under its own measure.
  const AttentionPlan mid = PlanAttention(l);
  ExpectSameGroups(l, mid);
  auto cost = [](const AttentionPlan& p) {
    return p.computed_pairs() + kAttentionCallCostPairs * p.calls();
  };
  EXPECT_LE(cost(mid), cost(exact));
  EXPECT_LE(cost(mid), cost(one));
}

TEST(AttentionPlanTest, EmptyRowsPlanNothing) {
  const PackedLayout l = BuildPackedLayout(4, 1, 1, 1, {{0, 1, 4}, {0, 2, 4}});
  EXPECT_EQ(PlanAttention(l).calls(), 0);
}

}  // namespace
}  // namespace baton
