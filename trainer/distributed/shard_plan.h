// Which rank owns which parameter when the optimizer state is sharded (optim.shard).
//
// Ownership is by whole parameter, so every exp_avg/exp_avg_sq tensor lives on exactly one rank
// under its own name and a checkpoint's optimizer shards are plain named tensors. The parameters,
// in the model's order, are cut into W contiguous ranges balanced by element count: rank r owns
// the parameters whose element range starts in [r·N/W, (r+1)·N/W). For the 5.1 B model the
// largest parameter is ~1 % of N, so each rank holds ≈ 1/W of the state. Collectives move each
// rank's range padded to the largest range (ShardPlan::padded). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace baton {

struct ShardPlan {
  int64_t world = 1;
  std::vector<int64_t> owner;   // per parameter, the owning rank
  std::vector<int64_t> begin;   // per rank, first parameter index it owns
  std::vector<int64_t> end;     // per rank, one past its last parameter
  std::vector<int64_t> numel;   // per rank, elements it owns
  std::vector<int64_t> offset;  // per parameter, element offset inside its owner's range
  int64_t padded = 0;           // the largest rank's element count (collective chunk size)
  int64_t total = 0;            // all elements
};

// `numels`: element count of each trainable parameter, in the model's order.
ShardPlan MakeShardPlan(const std::vector<int64_t>& numels, int64_t world);

// The plan of `plan`'s owners over other element counts: the same parameters moved in another
// unit (a bf16 all-gather that carries float32 parameters as two bf16 halves each).
ShardPlan ReshapeShardPlan(const ShardPlan& plan, const std::vector<int64_t>& numels);

}  // namespace baton
