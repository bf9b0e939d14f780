// CheckpointDiskBytes: the bytes one checkpoint folder holds on disk, file by file as the save
// writes it (docs/checkpoint_format.md), from the parameter list alone: `baton submit`'s storage
// forecast (docs/eval.md, "Storage forecast") multiplies it by the checkpoints retention keeps,
// and the trainer asks for it, plus a margin, before every save (trainer/ckpt/save_space.h).
//
// Beside the tensor data PlanCheckpointBytes counts, it holds what makes a small model's
// checkpoint bigger than its tensors: every safetensors header (built by the same
// SafetensorsHeader the writer uses, so exact), the AdamW step counts (an I64 [1] per trainable
// parameter), the export's shard plan (PlanExport, the writer's own), the indexes and the
// manifest (dumped as the save dumps them). Only config.json and trainer_state.json are
// estimated, at a fixed allowance each. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "schema/safetensors.h"
#include "trainer/memory/memory_plan.h"

namespace baton {

// The two small files whose text depends on values the plan does not have (the step, the LR,
// the dataset path): a fixed allowance each, above what they hold in practice.
inline constexpr int64_t kModelConfigAllowance = 1024;
inline constexpr int64_t kTrainerStateAllowance = 2048;

struct CheckpointDisk {
  int64_t bytes = 0;  // every file of one checkpoint, all ranks together
  int64_t files = 0;  // how many files (a filesystem rounds each up to its block)
  bool overflow = false;
};

// `master` and `exported`: the master dtype and checkpoint.export_dtype's; `world` >= 1.
CheckpointDisk CheckpointDiskBytes(const std::vector<PlanParameter>& params, int64_t world,
                                   StDType master, StDType exported, int64_t max_shard_bytes);

}  // namespace baton
