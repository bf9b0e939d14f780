// CheckStorage: `baton submit`'s and `baton sweep`'s storage forecast (docs/eval.md, "Storage
// forecast"): the run's footprint (schema/storage_forecast.h, from the trainer's memory plan)
// against the free space of the run folder's filesystem and, where `lfs quota` or `quota`
// answers, what is left of the user's quota there. A missing tool, or one that answers nothing
// this parser reads, is no quota, not an error. A forecast that does not fit is a warning, or
// with `strict` a refusal (kIo: exit 74, the code the trainer ends with when a save does not
// fit). No plan (no trainer): no forecast, a warning. Thread-compatible (runs processes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/memory_plan_report.h"
#include "schema/run_config.h"
#include "schema/status.h"
#include "schema/storage_forecast.h"

namespace baton {

// The quota left in bytes from `lfs quota -q -u USER PATH` or `quota -w -p -f PATH` output: the
// first line whose fields after the filesystem are used, soft and hard limits (kB, a trailing
// '*' when over). The smaller non-zero limit less what is used, clamped at 0; none when the
// output has no such line or both limits are 0 (unlimited).
std::optional<int64_t> ParseQuotaLeft(const std::string& output);

// Asks `lfs quota`, then `quota`, for `folder`; the first that answers: its bytes left and its
// name ("lfs quota", "quota").
std::optional<int64_t> QuotaLeft(const std::string& folder, std::string* source);

// The forecast for `config` from `plan`, judged against `folder` (an existing folder on the run
// folder's filesystem). Warnings go to `warnings`.
[[nodiscard]] Result<std::optional<StorageForecast>> CheckStorage(
    const RunConfig& config, const std::string& config_path, bool strict,
    const MemoryPlanReport* plan, const std::string& folder, std::vector<std::string>* warnings);

// The refusal or warning text for a forecast that does not fit.
std::string StorageShortText(const StorageForecast& f, const std::string& config_path);

}  // namespace baton
