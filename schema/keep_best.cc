#include "schema/keep_best.h"

#include <cmath>
#include <filesystem>

namespace baton {

RetentionRule RetentionRuleOf(const CheckpointSection& checkpoint) {
  RetentionRule r;
  r.keep_last = checkpoint.keep_last;
  r.keep_every = checkpoint.keep_every;
  r.best_k = checkpoint.keep_best_metric.empty() ? 0 : checkpoint.keep_best_k;
  return r;
}

std::vector<RetainedCheckpoint> WithEvalResults(const RunConfig& config, const EvalResults& evals,
                                                std::vector<RetainedCheckpoint> listed) {
  const std::string& metric = config.checkpoint.keep_best_metric;
  if (metric.empty()) return listed;
  for (RetainedCheckpoint& c : listed) {
    const auto it = evals.by_step.find(c.step);
    if (it == evals.by_step.end()) {
      c.value = kNoNumber;
      c.awaiting_eval = IsEvalTarget(config, c.step);
      continue;
    }
    const double v = EvalMetric(it->second, metric);
    c.value = std::isfinite(v) ? v : kNoNumber;
    c.awaiting_eval = false;
  }
  return listed;
}

std::vector<RetainedCheckpoint> RetainedOnDisk(const RunConfig& config,
                                               const std::string& checkpoints_dir,
                                               const std::vector<CheckpointEntry>& valid) {
  std::vector<RetainedCheckpoint> listed;
  for (const CheckpointEntry& c : valid) listed.push_back({c.step, c.finite});
  if (config.checkpoint.keep_best_metric.empty()) return listed;
  // Read at every save: an eval job may have written a result since the last one.
  const RunFolder run{std::filesystem::path(checkpoints_dir).parent_path().string()};
  return WithEvalResults(config, ReadEvalResults(run), std::move(listed));
}

std::optional<int64_t> BestEvaluated(const std::vector<int64_t>& steps, const EvalResults& evals,
                                     const std::string& metric) {
  std::optional<int64_t> best;
  double best_value = kNoNumber;
  for (int64_t step : steps) {
    const auto it = evals.by_step.find(step);
    if (it == evals.by_step.end()) continue;
    double v = EvalMetric(it->second, metric);
    if (!std::isfinite(v)) continue;
    if (!best || RanksBefore(v, step, best_value, *best)) {
      best = step;
      best_value = v;
    }
  }
  return best;
}

}  // namespace baton
