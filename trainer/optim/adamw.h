// AdamW over a model's named parameters, with its whole state exposed for checkpoints.
//
// The update is PyTorch's AdamW (decoupled weight decay, bias-corrected moments):
//   p <- p * (1 - lr * wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
//   p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// State per parameter: exp_avg, exp_avg_sq (same dtype as the parameter) and the step count t.
// A checkpoint stores all three, so an exact resume continues bit for bit. Also here: the global
// gradient norm and its clip. With sharded state (optim.shard, KeepOnly) this rank holds exp_avg
// and exp_avg_sq only for the parameters it owns and updates only those; every rank still counts
// every parameter's t. With optim.master sharded in a bf16 run (SplitMasters) a parameter may be
// split: the model computes with a bf16 copy (`param`), every rank accumulates its gradient in a
// float32 buffer (`grad32`), and only the owner holds the float32 master (`master`), updates it
// and rounds it into its copy; the other ranks' copies come from the step's all-gather.
// Not thread-safe.
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
  // The two halves of ClipGradNorm for sharded state, where the norm needs a reduction between
  // them: the sum of squares of the owned parameters' gradients (float64), and the clip of the
  // owned gradients given the global norm.
  double OwnedGradSquares() const;
  void ClipOwnedGrads(double norm, double max_norm);

  // Drops the moments of every parameter whose flag is false (this rank does not own it).
  void KeepOnly(const std::vector<bool>& owned);

  // Splits every parameter whose flag is set: its float32 value becomes the master (kept only
  // when owned, after KeepOnly) and the model's parameter turns into a `compute` copy of it.
  void SplitMasters(const std::vector<bool>& split, torch::Dtype compute);
  // After each micro-step's backward: adds the split parameters' compute-dtype gradients into
  // their float32 buffers (the rounding autocast's cast backward does) and frees them.
  void AccumulateSplitGrads();
  bool any_split() const { return any_split_; }

  struct ParamState {
    std::string name;
    torch::Tensor param, exp_avg, exp_avg_sq;  // moments undefined when not owned
    // Split parameters only: the float32 master (owned only) and gradient buffer (every rank).
    torch::Tensor master, grad32;
    int64_t step = 0;
    bool owned = true;
    bool split = false;
    // The gradient the step reduces and the optimizer reads, and the weight it updates.
    const torch::Tensor& grad() const { return split ? grad32 : param.grad(); }
    torch::Tensor& mutable_grad() { return split ? grad32 : param.mutable_grad(); }
    const torch::Tensor& weight() const { return split ? master : param; }
  };
  std::vector<ParamState>& state() { return state_; }
  const std::vector<ParamState>& state() const { return state_; }

 private:
  std::vector<ParamState> state_;
  OptimSection options_;
  bool any_split_ = false;
};

}  // namespace baton
