// The learning-rate schedule: a pure function of the step, the config and the resume decision.
//
//   lr(step) = base_lr * warmup_constant(step, warmup_steps) * resume_factor(step - step0)
//   warmup_constant(s, W) = s / W for s < W, else 1         (linear warmup, then constant)
//   resume_factor(s)      = min(1, (s + 1) / K)              only after a weights-only resume
//
// `step` is the 0-based index of the optimizer step being computed; a resume from
// checkpoint_step_N computes index N first (s = 0). An exact resume restores Adam's moments, so
// it has no resume factor (K = 0) and continues the uninterrupted curve bit for bit; the factor
// exists for weights-only checkpoints, where Adam's moments restart from zero (SEEDS.md note 004).
// Logged every step so the UI can draw it and tests can check it. Thread-safe (pure).
#pragma once

#include <cstdint>

namespace baton {

struct LrSchedule {
  double base_lr = 0.0;
  int64_t warmup_steps = 0;
  int64_t step0 = 0;          // first step index of this segment
  int64_t resume_warmup = 0;  // K; 0 = no resume factor (fresh or exact resume)

  double At(int64_t step) const;
  // True while the step is ramping: inside the initial warmup or the resume warmup.
  bool InWarmup(int64_t step) const;
  // First step index with no warmup factor left (= max of both ramps' ends).
  int64_t WarmupUntil() const;
};

double WarmupConstant(int64_t step, int64_t warmup_steps);

}  // namespace baton
