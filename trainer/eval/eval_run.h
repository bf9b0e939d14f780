// One committed checkpoint's eval, as the training job (inline mode) and `baton-train eval`
// (job mode) both run it: the value of the held-out set (eval_loss.h) for the model holding the
// checkpoint's weights, as an EvalEvent, and its result file <run>/evals/step_<N>.json written
// by rank 0 (schema/eval_results.h). The caller decides what an unwritable result means (the
// command fails, training goes on). Collective: every rank must call EvaluateCheckpoint.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>

#include "schema/event_records.h"
#include "schema/run_config.h"
#include "schema/run_folder.h"
#include "schema/status.h"
#include "trainer/distributed/process_group.h"
#include "trainer/eval/eval_set.h"
#include "trainer/model/video_action_model.h"

namespace baton {

// What is evaluated, and where its result goes.
struct EvalTarget {
  RunFolder run;           // the run folder the checkpoint lives in
  int64_t step = 0;        // the checkpoint's step
  std::string checkpoint;  // its folder
  EvalMode mode = EvalMode::kInline;
  std::string config_hash;  // ConfigHash of the model (trainer/ckpt/checkpoint.h)
  std::string job_id;       // the SLURM job evaluating it (SLURM_JOB_ID); "" outside SLURM
};

// The eval's value as an EvalEvent (job_id: the target's), timed.
EvalEvent EvaluateCheckpoint(VideoActionModel& model, const RunConfig& config, const EvalSet& set,
                             const DatasetShape& shape, torch::Dtype dtype,
                             const torch::Device& device, ProcessGroupHandle& group,
                             const EvalTarget& target,
                             const std::function<void(int64_t)>& on_episode = {});

// Rank 0: writes the event as evals/step_<N>.json; other ranks return Ok.
Status WriteEvalFile(ProcessGroupHandle& group, const EvalTarget& target, const EvalEvent& e);

}  // namespace baton
