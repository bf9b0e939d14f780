// GET /metrics: the run figures (store/run_metrics.h) and serve's own in the OpenMetrics text
// format, for a lab's Prometheus. Every family is a gauge (counts included: attempts by cause
// and hangs are what the store holds now, not counters this process increments), each sample
// labelled run, name, owner, cluster and partition; the text ends with "# EOF".
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/store/run_metrics.h"

namespace baton {

// The Content-Type of the answer.
inline constexpr const char* kOpenMetricsType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

// What serve knows about its own sync passes.
struct ServeFigures {
  double last_pass_s = 0;    // how long the last ingest + reconcile + alerts pass took
  double last_pass_end = 0;  // when it ended (Unix seconds; 0 = none yet)
};

std::string MetricsText(const std::vector<RunMetrics>& runs, const ServeFigures& serve, double now);

}  // namespace baton
