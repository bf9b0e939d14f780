// trainer_state.json: the step and what identifies the run, beside the parts the data plan and the
// LR schedule write of themselves (checkpoint.h holds the rest of a checkpoint). Plain JSON, no
// tensors: read and compared by the resume's checks without libtorch. A value type;
// thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schema/lr_schedule.h"
#include "trainer/data/data_plan.h"

namespace baton {

// trainer_state.json. The data plan and the LR schedule write their own parts (DataCursor,
// LrSchedule::ToJson); this struct adds the step and what identifies the run.
struct TrainerState {
  int64_t step = 0;    // finished optimizer steps
  DataCursor sampler;  // micro-batches each rank consumed since the plan's origin, and the plan
  int64_t world_size = 1;
  int64_t grad_accum = 0;
  int64_t seed = 0;
  LrSchedule lr;  // the schedule of the segment that wrote the checkpoint
  double last_lr = 0;
  std::string config_hash;  // of the model section + dataset sizes
  std::string dtype;
  // What makes an exact resume the same run (ExactResumeDifferences); empty in checkpoints
  // written before they were recorded, and then not compared.
  int64_t pad_multiple = 0;
  std::string data_path;            // the dataset folder, absolute
  std::string dataset_fingerprint;  // DatasetIndex::fingerprint
  nlohmann::json ToJson() const;
  static TrainerState FromJson(const nlohmann::json& j);
};

// What differs between a checkpoint's trainer state and the run about to continue it, as
// "key: checkpoint vs run" lines: seed, sampler plan, dtype, pad multiple, batch size, gradient
// accumulation, dataset folder and fingerprint. Empty when an exact resume may proceed; the
// world size may differ (the data plan is re-dealt).
std::vector<std::string> ExactResumeDifferences(const TrainerState& saved, const TrainerState& now);

// The numbers of a trainer state that index into the data plan and the schedule, in range: a
// hand-edited or damaged trainer_state.json is a data error naming the key (the manifest hashes
// only vouch for what the save wrote, and a re-hashed edit passes them): exit 65 naming `path`,
// the key, its value and the range.
void CheckTrainerStateRanges(const TrainerState& s, const std::string& path);

}  // namespace baton
