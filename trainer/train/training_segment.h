// TrainingSegment: one segment of a training run — the run of `baton-train train` inside one
// SLURM job attempt — as one object. Constructing it sets the segment up, like llm.c's main
// before its loop: config, ranks and data (segment_setup.h), model and optimizer, and where the
// segment starts (resume_point.h: the checkpoint's weights, AdamW state, data position and LR).
// Run() is the loop: read the step's micro-batches, step (forward, backward, update:
// train_step.h), report it (segment_report.h), and let the checkpointer decide whether to save
// (checkpointer.h); then the segment's end.
//
// Every way out of a stop goes through one place (LeaveOnStop): a stop signal before the first
// step, a step the stepper abandoned (a value it returns, never an exception), or a stop asked
// for after a step. Returns the process exit code: 0 at the target step, 75 after a stop
// (checkpointed; requeue me), 79 diverged. A FatalError propagates (train_loop.cc writes the
// segment_end record of an error).
//
// Owns the model, the optimizer, the shard plan, the resume point, the loader, the stepper, the
// reporter and the checkpointer; borrows the options and the log. The segment's thread only.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainer/ckpt/checkpoint.h"
#include "trainer/data/pad_collate.h"
#include "trainer/data/prefetch_loader.h"
#include "trainer/distributed/shard_plan.h"
#include "trainer/model/video_action_model.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/checkpointer.h"
#include "trainer/train/resume_point.h"
#include "trainer/train/run_folder_watch.h"
#include "trainer/train/segment_log.h"
#include "trainer/train/segment_report.h"
#include "trainer/train/segment_setup.h"
#include "trainer/train/train_loop.h"
#include "trainer/train/train_step.h"

namespace baton {

class TrainingSegment {
 public:
  // Sets the segment up and loads its start (every rank its part; collective).
  TrainingSegment(const TrainOptions& options, const TrainerEnvironment& environment,
                  SegmentLog& log);
  ~TrainingSegment();
  TrainingSegment(const TrainingSegment&) = delete;
  TrainingSegment& operator=(const TrainingSegment&) = delete;

  // Trains from the resume point to run.steps, or until a stop or a divergence.
  int Run();

  // What a save reads (checkpointer.h).
  const Setup& setup() const { return s_; }
  SegmentLog& log() const { return log_; }
  const TrainTestHooks& hooks() const { return options_.hooks; }
  VideoActionModel& model() { return model_; }
  const AdamW& optimizer() const { return *optimizer_; }
  const ShardPlan* shard_plan() const { return shard_plan_.get(); }
  const TrainerState& identity() const { return identity_; }
  const ResumePoint& resume_point() const { return rp_; }
  const RunFolderWatch& folder() const { return folder_; }

 private:
  // Where a stop leaves: before the first step, at the start of an abandoned step, or after a
  // step that some rank asked to be the last.
  enum class StopPoint { kBeforeFirstStep, kAbandonedStep, kAfterStep };

  // The micro-batches of step `step` for this rank, and the valid frames of the whole step (all
  // ranks: known from the plan alone). None once a stop signal is here: the step is abandoned
  // at its start, with no data to wait for.
  std::vector<PaddedBatch> ReadStep(int64_t micro, double* global_frames);
  // One step from its data to its checkpoint. Returns an exit code when the segment ends here.
  std::optional<int> TrainStep(int64_t step, int64_t& micro, int64_t& nonfinite_run);
  // The abandoned step `step`: the state of its start is left on disk, and the segment stops.
  int Abandon(const StepAbandoned& abandoned, int64_t step, int64_t micro);
  // Consecutive non-finite steps reached train.max_nonfinite_steps: the segment ends diverged.
  int Diverge(int64_t steps_done, int64_t nonfinite_run, const std::vector<std::string>& bad_ids);
  // The segment_end record and line of a stop for a requeue; `steps_done`: where it resumes,
  // `signal`: the stop signal the line names.
  int LeaveOnStop(StopPoint where, int64_t steps_done, int signal, bool nothing_new);
  // Tests' audit trail (BATON_EPISODE_LOG, trainer_environment.h): this rank's episodes of a
  // trained step.
  void LogEpisodes(int64_t step, const std::vector<PaddedBatch>& batches);

  const TrainOptions& options_;
  SegmentLog& log_;
  Setup s_;
  VideoActionModel model_{nullptr};
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<ShardPlan> shard_plan_;  // null: every rank holds all optimizer state
  torch::Tensor empty_text_;               // the dataset's empty prompt (text dropout)
  TrainerState identity_;
  ResumePoint rp_;
  RunFolderWatch folder_;
  std::unique_ptr<PrefetchLoader<PaddedBatch>> loader_;
  std::unique_ptr<TrainStepper> stepper_;
  std::unique_ptr<StepReporter> reporter_;
  std::FILE* episode_log_ = nullptr;
  // Last, so that it goes first: a background write still running is cancelled and joined
  // before anything else of the segment goes.
  std::unique_ptr<Checkpointer> checkpointer_;
};

}  // namespace baton
