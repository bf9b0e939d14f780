// The training run of `baton-train train`: config, data, model, optimizer, resume, loop,
// shutdown — in that order, like llm.c's main. Returns the process exit code: 0 at the target
// step, 75 after a stop signal (checkpointed; requeue me), 79 diverged; a FatalError (78 config,
// 65 data, 74 I/O) or any other exception (70) propagates to main after the run's events file got
// a segment_end record with reason "error", the exit code and the message.
//
// The segment itself is one object (training_segment.h): its set-up, its loop, and the parts
// beside it — segment_setup.h (config, ranks, data), resume_point.h (where the segment starts),
// train_step.h (one optimizer step), segment_report.h (what a step and the segment report) and
// checkpointer.h (when and how it saves).
#pragma once

#include <cstdint>
#include <string>

namespace baton {

// Knobs that exist for tests only, gathered so the run's own options stay what a user sets.
struct TrainTestHooks {
  // Stop as if signalled once this many steps of this segment are done (0 = never).
  int64_t stop_after = 0;
  // Die by SIGKILL at a save point (mid_file | before_manifest | before_rename), or make the save
  // on a stop signal slow (slow_save) so a test can land a second SIGTERM inside it.
  std::string fault;
  int64_t fault_at_step = -1;  // the save at this step dies (-1: the first save)
  int64_t fault_rank = 0;      // the rank that dies (a sharded save has every rank writing)
};

struct TrainOptions {
  std::string config_path;
  std::string run_dir;          // overrides run.dir
  std::string events_path;      // default <run_dir>/events/<job>.<restart>.jsonl
  std::string resume = "auto";  // auto | none | <checkpoint folder>
  // With --resume none: move the run folder's checkpoints aside (to checkpoints.replaced-<time>)
  // and start over. Without it, --resume none refuses a folder holding valid checkpoints, so two
  // runs never mix in one folder.
  bool start_over = false;
  std::string resume_mode;  // "" = from the checkpoint; weights_only forces a weights-only load
  // The launcher's decision, checked against the checkpoint (a contradiction is exit 78).
  std::string expect_mode;  // fresh | exact | weights_only
  int64_t expect_step0 = -1;
  int64_t resume_warmup = -1;  // -1 = optim.resume_warmup_steps
  // An upstream transformer/ folder to start from when the run has no checkpoint of its own
  // (overrides model.init_from); its config.json gives the model sizes.
  std::string init_from;
  // With an init folder: continue an upstream run at step N (LR schedule from step N with the
  // resume warmup, data position N * grad_accum); -1 = step 0. Fresh AdamW either way.
  int64_t step0 = -1;
  TrainTestHooks hooks;
};

int Train(const TrainOptions& options);

}  // namespace baton
