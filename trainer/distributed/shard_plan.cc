#include "trainer/distributed/shard_plan.h"

#include <algorithm>

namespace baton {

namespace {

// The ranges, offsets and sizes of `p` from its owners (non-decreasing) and `numels`.
void Lay(ShardPlan& p, const std::vector<int64_t>& numels) {
  const auto n = int64_t(numels.size());
  p.total = 0;
  for (int64_t x : numels) p.total += x;
  p.offset.assign(size_t(n), 0);
  p.begin.assign(size_t(p.world), n);
  p.end.assign(size_t(p.world), n);
  p.numel.assign(size_t(p.world), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = p.owner[size_t(i)];
    if (p.begin[size_t(r)] == n) p.begin[size_t(r)] = i;
    p.end[size_t(r)] = i + 1;
    p.offset[size_t(i)] = p.numel[size_t(r)];
    p.numel[size_t(r)] += numels[size_t(i)];
  }
  // A rank that owns nothing has the empty range [end of the previous, same).
  for (int64_t r = 0; r < p.world; ++r) {
    if (p.numel[size_t(r)] == 0) {
      const int64_t at = r == 0 ? 0 : p.end[size_t(r - 1)];
      p.begin[size_t(r)] = p.end[size_t(r)] = at;
    }
  }
  p.padded = *std::max_element(p.numel.begin(), p.numel.end());
}

}  // namespace

ShardPlan MakeShardPlan(const std::vector<int64_t>& numels, int64_t world) {
  ShardPlan p;
  p.world = std::max<int64_t>(1, world);
  const auto n = int64_t(numels.size());
  int64_t total = 0;
  for (int64_t x : numels) total += x;
  p.owner.assign(size_t(n), 0);
  int64_t start = 0;
  for (int64_t i = 0; i < n; ++i) {
    // Integer arithmetic (no rounding drift): the rank whose share contains this start.
    const int64_t r = total == 0 ? 0 : std::min<int64_t>(p.world - 1, (start * p.world) / total);
    p.owner[size_t(i)] = r;
    start += numels[size_t(i)];
  }
  Lay(p, numels);
  return p;
}

ShardPlan ReshapeShardPlan(const ShardPlan& plan, const std::vector<int64_t>& numels) {
  ShardPlan p;
  p.world = plan.world;
  p.owner = plan.owner;
  Lay(p, numels);
  return p;
}

}  // namespace baton
