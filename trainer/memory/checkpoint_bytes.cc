#include "trainer/memory/checkpoint_bytes.h"

#include "trainer/distributed/shard_plan.h"

namespace baton {

namespace {

// a += b * c, false when it leaves int64.
bool AddProduct(int64_t* a, int64_t b, int64_t c) {
  int64_t p = 0;
  return !__builtin_mul_overflow(b, c, &p) && !__builtin_add_overflow(*a, p, a);
}

}  // namespace

CheckpointBytes PlanCheckpointBytes(const std::vector<PlanParameter>& params, int64_t world,
                                    int64_t master_bytes, int64_t export_bytes) {
  CheckpointBytes out;
  if (world < 1) world = 1;
  out.rank_bytes.assign(size_t(world), 0);
  std::vector<int64_t> trainable;
  for (const auto& p : params) {
    if (p.trainable) trainable.push_back(p.numel);
  }
  const ShardPlan plan = MakeShardPlan(trainable, world);
  // Per element an owner writes the export, the master copy when the export is another dtype,
  // and for a trainable parameter exp_avg and exp_avg_sq.
  const int64_t weight_bytes = export_bytes + (export_bytes != master_bytes ? master_bytes : 0);
  bool ok = true;
  size_t t = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const PlanParameter& p = params[i];
    const int64_t owner = p.trainable ? plan.owner[t++] : int64_t(i) % world;
    int64_t& into = out.rank_bytes[size_t(owner)];
    ok = ok && AddProduct(&into, p.numel, weight_bytes);
    if (p.trainable) ok = ok && AddProduct(&into, p.numel, 2 * master_bytes);
  }
  for (int64_t b : out.rank_bytes) {
    ok = ok && !__builtin_add_overflow(out.total, b, &out.total);
    if (b > out.largest) out.largest = b;
  }
  out.overflow = !ok;
  return out;
}

}  // namespace baton
