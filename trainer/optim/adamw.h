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
// and rounds it into its copy; the other ranks' copies come from the step's all-gather. A hook on
// each split parameter widens its bf16 gradient into `grad32` as it arrives in the backward, and
// the bf16 `.grad` lives only until the next split parameter's gradient arrives: a rank never
// holds a bf16 gradient of every split parameter at once. Not thread-safe; the hooks point at
// this object, which is neither copied nor moved and removes them when destroyed.
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
  ~AdamW();
  AdamW(const AdamW&) = delete;
  AdamW& operator=(const AdamW&) = delete;

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
  // With `widen_on_arrival` a gradient hook on each copy adds its compute-dtype gradient into
  // the float32 buffer the moment the backward hands it over and frees the one before; without
  // (a test's control), AccumulateSplitGrads does it all after the backward.
  void SplitMasters(const std::vector<bool>& split, torch::Dtype compute,
                    bool widen_on_arrival = true);
  // After each micro-step's backward: adds the split parameters' compute-dtype gradients that
  // no hook took into their float32 buffers (the rounding autocast's cast backward does) and
  // frees every one still held. Every backward through split parameters is a micro-step's.
  void AccumulateSplitGrads();
  bool any_split() const { return any_split_; }
  int64_t split_count() const;
  // The most split parameters whose compute-dtype .grad was defined at the same time, counted
  // at each gradient's arrival and after each backward: 1 with the hooks, every split parameter
  // without.
  int64_t peak_compute_grads() const { return peak_compute_grads_; }

  struct ParamState {
    std::string name;
    torch::Tensor param, exp_avg, exp_avg_sq;  // moments undefined when not owned
    // Split parameters only: the float32 master (owned only) and gradient buffer (every rank).
    torch::Tensor master, grad32;
    int64_t step = 0;
    bool owned = true;
    bool split = false;
    bool arrived = false;  // split: its gradient came in this micro-step's backward
    // The gradient the step reduces and the optimizer reads, and the weight it updates.
    const torch::Tensor& grad() const { return split ? grad32 : param.grad(); }
    torch::Tensor& mutable_grad() { return split ? grad32 : param.mutable_grad(); }
    const torch::Tensor& weight() const { return split ? master : param; }
  };
  std::vector<ParamState>& state() { return state_; }
  const std::vector<ParamState>& state() const { return state_; }

 private:
  // The hook's work for split parameter `i`: widen `grad` into its buffer, free the earlier ones.
  void TakeSplitGrad(size_t i, const torch::Tensor& grad);
  void NoteComputeGrads();

  std::vector<ParamState> state_;
  OptimSection options_;
  bool any_split_ = false;
  std::vector<std::pair<size_t, unsigned>> hooks_;  // (parameter, hook id) to remove
  std::vector<size_t> pending_;  // split parameters whose bf16 .grad a hook left for AccumulateGrad
  int64_t peak_compute_grads_ = 0;
};

}  // namespace baton
