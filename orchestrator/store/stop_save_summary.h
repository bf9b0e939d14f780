// StopSaveSummary: what a run's page and `baton show` say about its stop saves — the time submit
// predicted against the preemption grace (stop_save_budgets, grace_check.h) next to the times
// the trainer measured for its stop saves (checkpoints whose reason is SaveReason::kSignal).
//
// One reader and one JSON shape for the CLI and the HTTP API. Value type; thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

struct StopSaveSummary {
  std::optional<StopSaveBudgetRecord> budget;  // none: submitted without the check
  std::vector<CheckpointRecord> measured;      // stop saves, newest first
};

[[nodiscard]] Result<StopSaveSummary> ReadStopSaveSummary(Store& store, int64_t run_id);

// {"predicted_s", "grace_s", "grace_source", "bytes_per_rank", "write_gbps", "write_source",
//  "fits", "measured": [{"step", "seconds", "bytes"}...]}; null figures when there is no budget.
nlohmann::json StopSaveJson(const StopSaveSummary& s);

// One line for `baton show`: "predicted 4.1 s for 8.75 GB per rank at 2.1 GB/s (probe of ...),
// grace 35 s (partition ...): fits; measured 3.2 s at step 40". "" when there is nothing to say.
std::string StopSaveLine(const StopSaveSummary& s);

// `v` with `digits` decimals: the figures of these lines and of submit's grace warning.
std::string Fixed(double v, int digits);

}  // namespace baton
