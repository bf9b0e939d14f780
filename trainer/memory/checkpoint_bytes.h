// PlanCheckpointBytes: the tensor bytes each rank writes in one checkpoint, from the model's
// parameter list alone, before the run starts. `baton submit` divides the largest rank's share
// by the checkpoint folder's write rate to predict the stop save against the preemption grace
// (docs/orchestrator.md, "Grace budget").
//
// The same ownership the save uses (docs/checkpoint_format.md, "Who writes what"): trainable
// parameters are owned by the element-balanced ShardPlan over the trainable tensors (optim.shard's
// plan, and the same plan in a replicated run); a frozen parameter, which has no optimizer state,
// by its index modulo W. An owner writes its parameters' AdamW moments (two tensors of the master
// dtype), their master weights when the export dtype differs from the master dtype, and their
// transformer/ export. Headers and the small files rank 0 writes (config.json, trainer_state.json,
// the indexes) are a few kB and are not counted. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/memory/memory_plan.h"

namespace baton {

struct CheckpointBytes {
  std::vector<int64_t> rank_bytes;  // per rank
  int64_t total = 0;
  int64_t largest = 0;    // the largest rank's share: what bounds a save's time
  bool overflow = false;  // a count exceeded int64: the figures above are meaningless
};

// `master_bytes` and `export_bytes`: bytes per element of the master dtype and of
// checkpoint.export_dtype. `world` >= 1.
CheckpointBytes PlanCheckpointBytes(const std::vector<PlanParameter>& params, int64_t world,
                                    int64_t master_bytes, int64_t export_bytes);

}  // namespace baton
