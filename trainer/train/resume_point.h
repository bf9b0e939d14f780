// Where a training segment starts (train_loop.cc's section 5): which checkpoint, decided before
// the model is built (the launcher's decision checked against it), the model sizes that follow
// from it or from the upstream folder of a fresh start, and then the loaded state: weights, AdamW
// moments, the data position (resharded when the world size changed) and the LR schedule.
// Fails fast (78 config) on a checkpoint of another run, a step beyond run.steps, or a
// contradiction with the launcher. Called from the segment's thread; not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "schema/lr_schedule.h"
#include "schema/resume_decision.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/data/data_plan.h"
#include "trainer/model/video_action_model.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/segment_setup.h"
#include "trainer/train/train_loop.h"

namespace baton {

// Where this segment starts: the checkpoint's weights, AdamW state, data position and LR.
struct ResumePoint {
  ResumeDecision decision;
  std::string init_from;  // the transformer/ folder the weights came from ("" when none)
  int64_t micro0 = 0;
  double load_seconds = 0;
  std::shared_ptr<DataPlan> plans;
  LrSchedule schedule;
  int64_t step0() const { return decision.step0; }
};

// Which checkpoint the segment starts from, decided before the model is built: the sizes of a
// run that has its own checkpoint come from it (StartDims).
ResumeDecision DecideStart(const TrainOptions& opt, const Setup& s);

// The model sizes, and the upstream folder to load (only on a fresh start). With an init folder
// its config.json gives the sizes of a fresh start; a resume takes them from its checkpoint's
// transformer/config.json and never reads the init folder, which may be gone (moved or purged)
// by the time a requeued segment starts. Checked against the weights' headers before a model of
// these sizes is allocated.
ModelDims StartDims(const TrainOptions& opt, const Setup& s, const ResumeDecision& start,
                    std::string* init_dir);

// Loads the start's state into `model` and `optimizer` (each rank its part), or the weights of
// `init_dir` on a fresh start from an upstream folder; the data plans and the LR schedule.
ResumePoint Resume(const TrainOptions& opt, const Setup& s, const ResumeDecision& start,
                   const TrainerState& identity, VideoActionModel& model, AdamW& optimizer,
                   const std::string& init_dir);

}  // namespace baton
