#include "schema/lr_schedule.h"

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

LrSchedule LrSchedule::ForSegment(const RunConfig& config, int64_t step0, int64_t resume_warmup) {
  return LrSchedule{config.optim.lr, config.optim.warmup_steps, step0, resume_warmup};
}

nlohmann::json LrSchedule::ToJson() const {
  return nlohmann::ordered_json{{"base_lr", base_lr},
                                {"warmup_steps", warmup_steps},
                                {"step0", step0},
                                {"resume_warmup", resume_warmup}};
}

LrSchedule LrSchedule::FromJson(const nlohmann::json& j) {
  return LrSchedule{j.at("base_lr").get<double>(), j.at("warmup_steps").get<int64_t>(),
                    j.at("step0").get<int64_t>(), j.at("resume_warmup").get<int64_t>()};
}

WarmupRange SegmentWarmup(const LrSchedule& schedule, int64_t last_index) {
  WarmupRange r{schedule.step0, std::max(schedule.step0, schedule.WarmupUntil())};
  if (last_index >= 0) r.until = std::max(r.from, std::min(r.until, last_index + 1));
  return r;
}

}  // namespace baton
