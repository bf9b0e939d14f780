#include "trainer/optim/lr_schedule.h"

#include <algorithm>

namespace baton {

double WarmupConstant(int64_t step, int64_t warmup_steps) {
  if (warmup_steps <= 0 || step >= warmup_steps) return 1.0;
  return static_cast<double>(step) / static_cast<double>(warmup_steps);
}

double LrSchedule::At(int64_t step) const {
  double lr = base_lr * WarmupConstant(step, warmup_steps);
  if (resume_warmup > 0) {
    const int64_t s = step - step0;
    lr *= std::min(1.0, static_cast<double>(s + 1) / static_cast<double>(resume_warmup));
  }
  return lr;
}

bool LrSchedule::InWarmup(int64_t step) const { return step < WarmupUntil(); }

int64_t LrSchedule::WarmupUntil() const {
  // The resume factor reaches 1 at s + 1 = K, i.e. step = step0 + K - 1.
  const int64_t resume_end = resume_warmup > 0 ? step0 + resume_warmup - 1 : 0;
  return std::max(warmup_steps, resume_end);
}

}  // namespace baton
