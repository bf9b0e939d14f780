// BlockHook: a function the model calls at every transformer-block boundary, in the forward pass
// and again in the backward pass, so that a caller can watch a step's progress and stop it
// between two blocks (the train step abandons a step on a stop signal this way, train_step.h).
//
// A hook is installed for the calling thread by a ScopedBlockHook. VideoActionModel::forward
// reads it once: it calls it before each block, and registers it on each block's output (and on
// the text context every block reads) so that backward calls it as each block's gradient pass
// begins and once block 0's is done, before the embedders' gradient passes. Backward may run on
// another thread (CUDA); the registration carries the hook there, so the scope need only live while
// forward runs. A hook may throw: out of forward, or out of backward (libtorch's engine hands a
// std::exception back to the caller of backward unchanged). Forwards without a hook (inference, the
// packing check) pay nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace baton {

enum class BlockPass { kForward, kBackward };

// `block`: forward, the block about to run (0 .. L-1), then L once the last one is done;
// backward, the block whose gradient pass is about to run (L-1 .. 0), then -1 after block 0.
using BlockHook = std::function<void(BlockPass pass, int64_t block)>;

class ScopedBlockHook {
 public:
  explicit ScopedBlockHook(BlockHook hook);
  ~ScopedBlockHook();
  ScopedBlockHook(const ScopedBlockHook&) = delete;
  ScopedBlockHook& operator=(const ScopedBlockHook&) = delete;

 private:
  std::shared_ptr<const BlockHook> previous_;
};

// The hook of the innermost live scope on this thread, or null.
std::shared_ptr<const BlockHook> CurrentBlockHook();

}  // namespace baton
