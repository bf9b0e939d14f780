#include "orchestrator/launcher/straggler_watch.h"

#include <algorithm>

namespace baton {

std::vector<Straggler> StragglerWatch::Observe(const std::map<int64_t, HeartbeatRecord>& beats) {
  std::vector<Straggler> out;
  constexpr size_t kMinRanks = 3;  // with two, "the median" is one of the two
  if (beats.size() < kMinRanks) return out;
  int64_t passed = INT64_MAX;
  std::vector<double> times;
  for (const auto& [rank, b] : beats) {
    if (b.step_s <= 0) return out;  // a rank without a finished step yet
    passed = std::min(passed, b.step);
    times.push_back(b.step_s);
  }
  if (passed <= sampled_step_) return out;  // no new step finished by every rank
  sampled_step_ = passed;
  std::nth_element(times.begin(), times.begin() + long(times.size() / 2), times.end());
  const double median = times[times.size() / 2];
  for (const auto& [rank, b] : beats) {
    int64_t& streak = streak_[rank];
    streak = b.step_s > rule_.factor * median ? streak + 1 : 0;
    if (streak >= rule_.steps && named_.insert(rank).second) {
      Straggler s{rank, b.node.empty() ? b.host : b.node, b.step_s, median, streak};
      out.push_back(s);
      found_.push_back(s);
    }
  }
  return out;
}

}  // namespace baton
