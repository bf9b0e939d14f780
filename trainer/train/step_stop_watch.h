// How one optimizer step notices a stop signal and how the ranks agree to abandon it
// (train_step.h, docs/trainer.md "Stopping and resuming"): the block watch that the model's block
// hook calls at every transformer-block boundary (it times the blocks and leaves the micro-steps
// by throwing LeaveMicroSteps, the one way out of libtorch's forward or backward, caught in
// TrainStepper::Step and never past it), where a signal landed in words, the step's vote, and
// the StepAbandoned value built from them. Used on the stepper's thread only.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "trainer/distributed/process_group.h"
#include "trainer/model/block_hook.h"
#include "trainer/train/step_abandon.h"
#include "trainer/train/stop_signal.h"

namespace baton {

// Leaves this rank's micro-steps: thrown at a block boundary (through libtorch's forward or
// backward, which hand a std::exception back unchanged) or at a micro-step's start; caught in
// Step. `where` says where, for the log.
struct LeaveMicroSteps : std::exception {
  std::string where;
  explicit LeaveMicroSteps(std::string w) : where(std::move(w)) {}
  const char* what() const noexcept override { return "stop signal at a block boundary"; }
};

// Where a signal landed, in words. Step numbers in messages are 1-based like the progress line;
// micro-steps and blocks are indices.
std::string Where(StopPhase phase, int64_t step, int64_t micro, int64_t block);

// The step's vote, one small exchange before any gradient leaves a rank: each rank's
// [abandon, stop after this step, signal number].
struct Vote {
  bool abandon = false, stop = false;
  int signal = 0, signal_rank = 0;
};
Vote TakeVote(ProcessGroupHandle& group, bool abandon, bool stop, int signal);

// What the block hook of one step keeps: where it is, and how long each block took.
struct BlockWatch {
  int64_t step = 0, micro = 0, layers = 0, sleep_us = 0;
  BlockPass pass = BlockPass::kForward;
  int64_t block = -2;  // -2: no boundary yet in this micro-step
  double t = 0;
  std::vector<double> forward_s;  // per block, of the current micro-step
  double longest_s = 0;           // forward + backward of one block
  std::vector<double> blocks_s;   // forward + backward of every block done in this step

  // A block boundary: times the block just done, and leaves on a stop signal.
  void At(BlockPass p, int64_t b);
};

// The abandoned step `step` as the vote decided it: the agreed signal and, on a rank that got
// one, where it landed and where this rank left (`left`: "" when it ran all its micro-steps).
// `block_s`: the longest block of the latest step that ran one.
StepAbandoned Abandoned(const Vote& vote, int64_t step, double block_s, const BlockWatch& watch,
                        const std::string& left);

}  // namespace baton
