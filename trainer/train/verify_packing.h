// The packing check, made exact: a packed forward / loss / backward of a batch versus the
// same episodes run one by one, on the same model and the same per-episode draws.
//
// With the loss normalised by the batch's valid frames, the packed loss must equal the sum of
// the single losses and every packed gradient the sum of the single gradients. In float64 they
// agree to ~1e-15; the check reports the max relative differences and whether every gradient
// is finite (padded rows must never produce NaN). Used by `baton-train verify-packing` and tests.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "schema/run_config.h"
#include "trainer/data/episode_reader.h"
#include "trainer/model/video_action_model.h"

namespace baton {

struct PackingComparison {
  std::string name;
  std::vector<int64_t> frames;  // valid frames of each episode
  int64_t padded_frames = 0;
  int64_t row_tokens = 0;  // tokens of the packed row (its longest reduction)
  double loss_packed = 0, loss_single = 0;
  double loss_rel_diff = 0;
  double max_grad_rel_diff = 0;  // max over parameters of max|gp - gs| / max|gs|
  // ||gp - gs|| / ||gs|| over all gradients as one vector: the bf16 figure, where a parameter
  // whose true gradient is zero (a key bias under softmax) holds only rounding noise.
  double grad_norm_rel_diff = 0;
  std::string worst_param;
  int64_t grads_finite = 0, grads_total = 0;
};

// Runs the comparison for `episodes` at optimizer step `step` (it keys the draws). `dtype`
// kBFloat16 means a float32 model computing under bf16 autocast (train.dtype bfloat16).
PackingComparison ComparePackedWithSingle(VideoActionModel& model, const RunConfig& config,
                                          const std::vector<EpisodeData>& episodes, int64_t step,
                                          torch::Dtype dtype, const std::string& name,
                                          const torch::Tensor& empty_text = torch::Tensor());

// max|a - b| / max(max|b|, tiny), in float64.
double MaxRelDiff(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace baton
