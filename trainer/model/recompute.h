// Activation checkpointing: run a function without keeping its intermediate tensors, and run it
// again in the backward pass to get its gradients (train.activation_checkpointing: blocks).
//
// Recompute(fn, inputs) returns fn(inputs) computed with autograd off, so only `inputs` are kept.
// In backward, fn runs again with autograd on, from detached copies of the inputs, and a nested
// backward pass through that graph accumulates the gradients of fn's parameters into their
// .grad (as a normal backward does) and hands the inputs' gradients on. libtorch 1.13 has no
// ready helper for this; it is a custom autograd Function.
//
// Gradients are bitwise those of calling fn directly when (1) fn is deterministic (CPU, same
// threads), (2) fn uses each parameter once, and (3) an input fn uses more than once is passed
// through Reuse() on the direct path as well: its uses then meet in one node per call on both
// paths, so their sum is formed in the same order. The autocast state of the forward is restored
// for the recompute, and the casts it cached are dropped after its backward (they would outlive
// the step, stale after the update). Owner: the model (video_action_model.cc) calls it per
// transformer block.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace baton {

using RecomputeFn = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// fn(inputs), recomputed in backward instead of kept. Inputs that do not require grad (layout
// tensors, RoPE tables) are fine; the output must be one tensor.
torch::Tensor Recompute(RecomputeFn fn, const std::vector<torch::Tensor>& inputs);

// How many recomputations backward passes have run in this process (tests and benches check that
// checkpointing took effect).
int64_t RecomputeCount();

// A view of `x` with its own autograd node, so that several uses of x inside one call sum their
// gradients there first (see (3) above). Free: no copy.
torch::Tensor Reuse(const torch::Tensor& x);

}  // namespace baton
