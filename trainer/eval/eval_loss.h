// The eval metric: the flow-matching validation loss of a model on the held-out set, with its
// video and action parts (docs/eval.md, "Evaluation").
//
// Each held-out episode is one micro-batch of its own, prepared by PrepareMicroBatch as training
// prepares one, at fixed draws: the stream of (eval.seed, kEvalDrawStep, the episode's index in
// its own dataset), never a training step's, rank's or batch's. Text dropout is off (the eval
// scores the prompt). Rank r evaluates episodes r, r + W, ...; every rank then gathers every
// episode's float64 sums over the process group and adds them in episode order, so the value
// is the same on every rank and does not depend on the world size beyond each episode's own
// forward. Forward only (no grad); the model is left as it was, and nothing draws from a
// generator training uses. Collective: every rank must call it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>

#include "schema/run_config.h"
#include "trainer/distributed/process_group.h"
#include "trainer/eval/eval_set.h"
#include "trainer/model/video_action_model.h"

namespace baton {

// The step the eval's draws are keyed by: below every training step, so an eval draw is never a
// training draw, whatever eval.seed and run.seed are.
inline constexpr int64_t kEvalDrawStep = -1;

struct EvalValue {
  double loss = 0, loss_video = 0, loss_action = 0;  // per valid frame, as the training loss
  double video_sum = 0, action_sum = 0;              // float64 sums over the held-out frames
  int64_t episodes = 0, valid_frames = 0;
};

// `on_episode(k)` runs before this rank's k-th episode (a heartbeat); may be empty. A bad
// episode file is exit 65 on every rank alike.
EvalValue EvaluateHeldOut(VideoActionModel& model, const RunConfig& config, const EvalSet& set,
                          const DatasetShape& shape, torch::Dtype dtype,
                          const torch::Device& device, ProcessGroupHandle& group,
                          const std::function<void(int64_t)>& on_episode = {});

}  // namespace baton
