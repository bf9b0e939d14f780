// The flow-matching objective of docs/model.md, with per-episode randomness.
//
// Every random choice for an episode at an optimizer step — per-frame timesteps for video and
// actions, the noise, whether the clean video copy is lightly noised (and its timesteps), the
// attention chunk size and window — comes from the counter-based stream (seed, step, episode).
// So an episode gets the same draws however it is batched, packed or sharded, which makes
// batch 1 x accum 16 == batch 4 x accum 4 == 2 ranks exact, not just equal on average.
//
// The loss is normalised by the global count of valid frames of the whole optimizer step (all
// micro-steps, all ranks): each micro-step contributes sum(frame losses) / global_frames, and
// summing gradients over micro-steps and ranks gives the step's gradient. Thread-safe (pure).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "schema/run_config.h"
#include "trainer/data/pad_collate.h"
#include "trainer/model/packed_layout.h"
#include "trainer/model/video_action_model.h"

namespace baton {

// Timestep grid of one stream: sigma_i = shift*s / (1 + (shift-1)*s), s = 1 - i/1000, t =
// 1000*sigma, and the Gaussian loss weight w_i = exp(-2((t_i - 500)/1000)^2) - min, renormalised to
// mean 1.
struct TimestepGrid {
  std::vector<double> sigma, t, weight;  // 1000 entries each
  static TimestepGrid Make(double shift);
};

struct EpisodeDraws {
  int64_t chunk = 1, window = 0;
  bool clean_noised = false;
  // The episode's text is replaced by the dataset's empty prompt (objective.text_dropout). From
  // its own stream, so turning dropout on or off changes no other draw.
  bool text_dropped = false;
  std::vector<int64_t> u_video, u_action, u_clean;       // per valid frame, grid indices
  std::vector<double> eps_video, eps_action, eps_clean;  // [C,F,H,W], [A,F,N], [C,F,H,W]
};

EpisodeDraws DrawEpisode(uint64_t seed, int64_t step, int64_t episode, int64_t frames,
                         const DatasetShape& shape, const ObjectiveSection& objective);

// Everything one micro-step needs: model inputs, targets, weights and the packed layout.
struct MicroBatch {
  ModelInputs inputs;
  torch::Tensor target_video;   // [B, C, Fp, H, W] = eps - x0
  torch::Tensor target_action;  // [B, A, Fp, N]
  torch::Tensor action_mask;    // [B, A, Fp, N]
  torch::Tensor weight_video;   // [B, Fp] w(t), 0 on padded frames
  torch::Tensor weight_action;  // [B, Fp]
  torch::Tensor frame_valid;    // [B, Fp] 1/0
  PackedLayout layout;
  LayoutTensors layout_tensors;
  int64_t valid_frames = 0, padded_frames = 0, samples = 0;
  int64_t tokens = 0, padded_tokens = 0;  // valid tokens / tokens of padded frames
  int64_t text_dropped = 0;               // samples whose text was the empty prompt
};

// `empty_text` [L, Dt]: the dataset's empty-prompt embedding (meta/empty_text.safetensors);
// needed only when a draw drops an episode's text (exit 65 when it is then undefined).
// Noisy actions, clean actions and the action target are multiplied by actions_mask, as
// upstream's training does: unused channels carry no noise into the model.
MicroBatch PrepareMicroBatch(const PaddedBatch& batch, uint64_t seed, int64_t step,
                             const DatasetShape& shape, const ObjectiveSection& objective,
                             const ModelDims& dims, torch::Dtype dtype, torch::Device device,
                             const torch::Tensor& empty_text = torch::Tensor());

struct LossSums {
  torch::Tensor total;   // scalar: (wv * video_sum + wa * action_sum) / global_frames
  torch::Tensor video;   // scalar: sum over valid frames of weighted per-frame video MSE
  torch::Tensor action;  // scalar: same for the masked action MSE
};

LossSums ComputeLoss(const ModelOutputs& out, const MicroBatch& mb, double global_frames,
                     const ObjectiveSection& objective);

}  // namespace baton
