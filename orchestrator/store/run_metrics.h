// The figures `GET /metrics` exposes per run (docs/alerts.md, "Metrics"): last step and its time,
// tokens/s and loss of that step, attempts by end reason, hangs, the newest valid checkpoint's
// time, the seconds spent in requeue holds and the ETTR (time_bucket_store.h: the stored run row,
// computed from the records only for a run not synced since it has any) and the latest eval
// result's step and loss (store_evals.h). Which runs: every active
// one, plus the most recently ended ones up to a cap, so the series a Prometheus keeps stay
// bounded.
//
// Part of the store, the only code that speaks SQL. A free function over a Store the caller owns;
// thread-compatible, like the Store.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

// Ended runs /metrics keeps after the active ones (newest status change first).
inline constexpr int64_t kMetricsRecentEndedRuns = 100;

struct RunMetrics {
  RunRecord run;  // config not read
  std::optional<int64_t> last_step;
  std::optional<double> last_step_time;
  std::optional<double> tokens_per_s;
  std::optional<double> loss;
  std::map<std::string, int64_t> attempts_by_reason;  // end_reason ('' = still running)
  int64_t hangs = 0;
  std::optional<double> checkpoint_time;
  double requeue_hold_s = 0;   // between an attempt requeued and the next one's start
  std::optional<double> ettr;  // productive / wall since submit; none without wall
  // The run's latest eval result (the highest evaluated checkpoint step) and its loss.
  std::optional<int64_t> eval_step;
  std::optional<double> eval_loss;
};

[[nodiscard]] Result<std::vector<RunMetrics>> ReadRunMetrics(Store& store, int64_t ended_cap);

}  // namespace baton
