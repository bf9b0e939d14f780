// AdamW over a model's named parameters, with its whole state exposed for checkpoints.
//
// The update is PyTorch's AdamW (decoupled weight decay, bias-corrected moments):
//   p <- p * (1 - lr * wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
//   p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// State per parameter: exp_avg, exp_avg_sq (same dtype as the parameter) and the step count t.
// A checkpoint stores all three, so an exact resume continues bit for bit. Also here: the global
// gradient norm and its clip. Not thread-safe.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "schema/run_config.h"

namespace baton {

class AdamW {
 public:
  AdamW(std::vector<std::pair<std::string, torch::Tensor>> params, const OptimSection& options);

  // One update with learning rate `lr` from the parameters' current .grad().
  void Step(double lr);
  void ZeroGrad();

  // sqrt(sum of squared gradients), accumulated in float64; scales the gradients down to
  // `max_norm` when above it (max_norm <= 0: no clipping). Returns the norm before clipping.
  double ClipGradNorm(double max_norm);

  struct ParamState {
    std::string name;
    torch::Tensor param, exp_avg, exp_avg_sq;
    int64_t step = 0;
  };
  std::vector<ParamState>& state() { return state_; }
  const std::vector<ParamState>& state() const { return state_; }

 private:
  std::vector<ParamState> state_;
  OptimSection options_;
};

}  // namespace baton
