// The series core: what a chart series is, once, for both ways the store answers one — the
// step rows themselves (the row path) and their min/max rollups (series_rollups.h).
//
// One table of series keys (Vocabulary<SeriesKey>: the names the API speaks; beside it the slot
// a rollup node keeps each in), one row type (SeriesRow: the step columns a series needs, read
// through SeriesRowTable() in record_columns.h, never by position) and one value rule
// (SeriesValue). The expected LR overlay is a function of the step and the run's schedule
// (ExpectedSchedule), so rollup nodes do not store it; the rule still answers it, from the same
// row.
//
// Pure value types and functions; thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/lr_schedule.h"
#include "schema/vocabularies.h"

namespace baton {

// The schedule a run should follow with no re-warmup (schema/lr_schedule.h with no resume
// factor), and what a weights-only resume adds. Read from the frozen config by the history views
// (orchestrator/history/run_timeline.h, ScheduleFromConfig).
struct ExpectedSchedule {
  bool known = false;  // false when the config could not be read (no overlay then)
  double base_lr = 0;
  int64_t warmup_steps = 0;
  int64_t resume_warmup_steps = 0;  // K of a weights-only resume: ramp min(1, (s + 1) / K)

  // Learning rate at 0-based step index `step` of an uninterrupted run.
  double At(int64_t step) const;
  // The schedule of a segment that starts at step0 with resume warmup K: the trainer's own.
  LrSchedule Segment(int64_t step0, int64_t resume_warmup) const;
};

// The series the API serves (docs/http_api.md), in the order SeriesKeys() lists them.
enum class SeriesKey : int {
  kLr,
  kExpectedLr,
  kLoss,
  kLossVideo,
  kLossAction,
  kGradNorm,
  kTokensPerS,
  kStepTimeS,
  kPadding,  // padded / (valid + padded) tokens
  kTokens,
};

// "lr", "expected_lr", ...: the names the API speaks (Name, Find, Names: schema/vocabularies.h).
template <>
struct Vocabulary<SeriesKey> {
  static constexpr Word<SeriesKey> kWords[] = {{SeriesKey::kLr, "lr"},
                                               {SeriesKey::kExpectedLr, "expected_lr"},
                                               {SeriesKey::kLoss, "loss"},
                                               {SeriesKey::kLossVideo, "loss_video"},
                                               {SeriesKey::kLossAction, "loss_action"},
                                               {SeriesKey::kGradNorm, "grad_norm"},
                                               {SeriesKey::kTokensPerS, "tokens_per_s"},
                                               {SeriesKey::kStepTimeS, "step_time_s"},
                                               {SeriesKey::kPadding, "padding"},
                                               {SeriesKey::kTokens, "tokens"}};
};
// Every key, in table order (which is enum order: the node slots below are indexed by it).
const std::vector<SeriesKey>& SeriesKeys();
// Where a rollup node keeps the key (series_rollup_node.h): 1.. for a stored key, -1 for one
// derived at query time (expected_lr). Slot 0 is the node's row count.
int RollupSlot(SeriesKey key);

// The columns of one step row a series needs. Doubles are NaN for SQL NULL.
struct SeriesRow {
  int64_t attempt_id = 0;
  int64_t step = 0;
  double time = 0;
  int64_t tokens = 0;
  int64_t padded_tokens = 0;
  bool in_warmup = false;
  bool nonfinite = false;
  double lr = NAN, loss = NAN, loss_video = NAN, loss_action = NAN, grad_norm = NAN,
         step_time_s = NAN, tokens_per_s = NAN;
  bool superseded = false;
};

// The value of `key` at a row, NaN where it has none. A skipped (non-finite) step has no loss or
// gradient-norm point: even a finite loss of a step that was not applied is not part of the curve
// (one huge value would flatten the chart); the charts mark those steps (docs/http_api.md).
double SeriesValue(SeriesKey key, const SeriesRow& r, const ExpectedSchedule& schedule);

}  // namespace baton
