// StepAbandoned: what TrainStepper::Step returns (in StepStats::abandoned), on every rank alike,
// when a stop signal ended the step before its update (train_step.h, docs/trainer.md "Stopping
// and resuming"). Nothing of the step is applied: gradients are zeroed, weights, AdamW state, the
// data position and the LR schedule are those of the step's start, so the caller checkpoints
// `step` steps done and exits. The fields say where it happened on this rank, for the log and the
// bench. A plain value: the stop travels back through return values, never as an exception.
#pragma once

#include <cstdint>
#include <string>

namespace baton {

struct StepAbandoned {
  int64_t step = 0;     // 0-based: the step abandoned = the number of steps done
  int signal = 0;       // the agreed signal: that of the lowest rank which holds one
  int signal_rank = 0;  // that rank
  // This rank: where its own signal landed and where it left ("" when it got none).
  std::string landed, left;
  // This rank's signal to the end of the vote, seconds (-1: it got no signal).
  double latency_s = -1;
  // The longest forward + backward of one block in the latest step that ran one, seconds.
  double block_s = 0;
  // The median forward + backward of the blocks this step ran before it was abandoned (0: none),
  // what one block costs when other work does not interrupt it.
  double block_median_s = 0;
};

}  // namespace baton
