// The learning-rate schedule: a pure function of the step, the config and the resume decision.
// One definition for everything that computes or shows an LR: the trainer, `baton-train
// lr-schedule`, the CLI's warmup column, the run page's shaded ranges and expected curve.
//
//   lr(step) = base_lr * warmup_constant(step, warmup_steps) * resume_factor(step - step0)
//   warmup_constant(s, W) = s / W for s < W, else 1         (linear warmup, then constant)
//   resume_factor(s)      = min(1, (s + 1) / K)              only after a weights-only resume
//
// `step` is the 0-based index of the optimizer step being computed; a resume from
// checkpoint_step_N computes index N first (s = 0). An exact resume restores Adam's moments, so
// it has no resume factor (K = 0) and continues the uninterrupted curve bit for bit; the factor
// exists for weights-only checkpoints, where Adam's moments restart from zero and a full-LR first
// step would undo the loaded weights (docs/design.md, "Why weights-only resumes re-warm").
// Logged every step so the UI can draw it and tests can check it. Thread-safe (pure).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "schema/run_config.h"

namespace baton {

struct LrSchedule {
  double base_lr = 0.0;
  int64_t warmup_steps = 0;
  int64_t step0 = 0;          // first step index of this segment
  int64_t resume_warmup = 0;  // K; 0 = no resume factor (fresh or exact resume)

  // The schedule of a segment of a run with `config` that starts at step0 with resume warmup K.
  static LrSchedule ForSegment(const RunConfig& config, int64_t step0, int64_t resume_warmup);
  // The uninterrupted run's schedule (no resume factor): the run page's expected curve.
  static LrSchedule Uninterrupted(const RunConfig& config) { return ForSegment(config, 0, 0); }

  double At(int64_t step) const;
  // True while the step is ramping: inside the initial warmup or the resume warmup.
  bool InWarmup(int64_t step) const;
  // First step index with no warmup factor left (= max of both ramps' ends).
  int64_t WarmupUntil() const;

  // The trainer state's "lr_schedule" object: base_lr, warmup_steps, step0, resume_warmup.
  nlohmann::json ToJson() const;
  static LrSchedule FromJson(const nlohmann::json& j);  // throws nlohmann::json::exception
};

double WarmupConstant(int64_t step, int64_t warmup_steps);

// The ramp a segment ran, as 0-based step indices [from, until), clipped to the steps it reached
// (`last_index`: 0-based index of its last finished step; -1 when unknown, then not clipped);
// empty when there was none.
struct WarmupRange {
  int64_t from = 0, until = 0;
  bool empty() const { return until <= from; }
};
WarmupRange SegmentWarmup(const LrSchedule& schedule, int64_t last_index);

}  // namespace baton
