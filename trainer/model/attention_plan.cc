#include "trainer/model/attention_plan.h"

#include <algorithm>
#include <limits>
#include <map>

namespace baton {

int64_t AttentionPlan::computed_pairs() const {
  int64_t n = 0;
  for (const auto& b : buckets) n += b.computed_pairs();
  return n;
}

int64_t GroupsPerCall(int64_t heads, int64_t lq, int64_t lk, int64_t max_entries) {
  const int64_t per_group = std::max<int64_t>(1, heads * lq * lk);
  return std::max<int64_t>(1, max_entries / per_group);
}

namespace {

struct GroupRef {
  const SampleAttention* sample;
  int64_t group;
  int64_t keys;  // used key slots (the layout packs them at the front of the group's row)
};

// Optimal partition of groups sorted by key count into contiguous buckets, each padded to its
// largest key count: dynamic programming over the distinct key counts, O(distinct^2).
std::vector<std::pair<size_t, size_t>> Partition(const std::vector<GroupRef>& g, int64_t lq,
                                                 int64_t call_cost) {
  // Runs of equal key count: [begin, end) into g.
  std::vector<size_t> starts;
  for (size_t i = 0; i < g.size(); ++i) {
    if (i == 0 || g[i].keys != g[i - 1].keys) starts.push_back(i);
  }
  const size_t m = starts.size();
  starts.push_back(g.size());
  std::vector<double> best(m + 1, std::numeric_limits<double>::infinity());
  std::vector<size_t> from(m + 1, 0);
  best[0] = 0;
  for (size_t j = 1; j <= m; ++j) {  // buckets ending with run j - 1, padded to its key count
    const double lk = static_cast<double>(g[starts[j - 1]].keys);
    for (size_t i = 0; i < j; ++i) {  // ... starting with run i
      const double groups = static_cast<double>(starts[j] - starts[i]);
      const double cost = best[i] + double(call_cost) + groups * double(lq) * lk;
      if (cost < best[j]) {
        best[j] = cost;
        from[j] = i;
      }
    }
  }
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t j = m; j > 0; j = from[j]) out.push_back({starts[from[j]], starts[j]});
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

AttentionPlan PlanAttention(const PackedLayout& layout, int64_t call_cost_pairs) {
  std::map<int64_t, std::vector<GroupRef>> by_lq;
  for (const auto& a : layout.attention) {
    for (int64_t gi = 0; gi < a.groups; ++gi) {
      const int64_t* row = a.keys.data() + gi * a.lk;
      int64_t used = 0;
      while (used < a.lk && row[used] >= 0) ++used;
      by_lq[a.lq].push_back({&a, gi, used});
    }
  }
  AttentionPlan plan;
  for (auto& [lq, groups] : by_lq) {
    // Stable: within a key count, groups keep the layout's sample and frame order.
    std::stable_sort(groups.begin(), groups.end(),
                     [](const GroupRef& x, const GroupRef& y) { return x.keys < y.keys; });
    for (const auto& [begin, end] : Partition(groups, lq, call_cost_pairs)) {
      AttentionBucket b;
      b.lq = lq;
      b.lk = groups[end - 1].keys;
      b.groups = static_cast<int64_t>(end - begin);
      b.queries.reserve(static_cast<size_t>(b.groups * lq));
      b.keys.assign(static_cast<size_t>(b.groups * b.lk), -1);
      for (size_t i = begin; i < end; ++i) {
        const GroupRef& g = groups[i];
        const int64_t* q = g.sample->queries.data() + g.group * lq;
        b.queries.insert(b.queries.end(), q, q + lq);
        const int64_t* k = g.sample->keys.data() + g.group * g.sample->lk;
        std::copy(k, k + g.keys, b.keys.begin() + static_cast<int64_t>(i - begin) * b.lk);
      }
      plan.buckets.push_back(std::move(b));
    }
  }
  return plan;
}

}  // namespace baton
