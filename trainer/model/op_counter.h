// OpCounter: counts the ATen operators a piece of code dispatches, forward and backward, so the
// tests and the bench can show how many attention ops a layer costs (each is at least one kernel
// launch on a GPU and one trip through the dispatcher on a CPU).
//
// Counts top-level operators only (an operator called from inside another, e.g. the bmm inside a
// matmul, is part of its caller), on every thread, while an OpCounter is alive. One counter at a
// time per process; not for production paths (it makes every operator call pay for a callback).
#pragma once

#include <ATen/record_function.h>

#include <atomic>
#include <cstdint>

namespace baton {

class OpCounter {
 public:
  OpCounter() {
    count() = 0;
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&OpCounter::Enter, &OpCounter::Exit)
                                        .scopes({at::RecordScope::FUNCTION}));
  }
  ~OpCounter() { at::removeCallback(handle_); }
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  int64_t ops() const { return count().load(); }

 private:
  static std::atomic<int64_t>& count() {
    static std::atomic<int64_t> n{0};
    return n;
  }
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
  static std::unique_ptr<at::ObserverContext> Enter(const at::RecordFunction&) {
    if (depth()++ == 0) ++count();
    return nullptr;
  }
  static void Exit(const at::RecordFunction&, at::ObserverContext*) { --depth(); }

  at::CallbackHandle handle_;
};

}  // namespace baton
