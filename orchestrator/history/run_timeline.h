// RunTimeline: what a run's attempts mean on its charts — the expected LR schedule (from the
// frozen config), one segment per attempt with its boundary label ("#3 preempted → resumed
// exact @ 1500") and warmup range, and the audit figures (steps under warmup, steps redone,
// time lost to requeue holds).
//
// One of the history views the CLI (`baton show`, `baton attempts`) and the web API share: pure
// functions over records the store returned; no I/O, no SQL. The schedule type itself
// (ExpectedSchedule) sits with the store's series rule (store/series_values.h), which draws the
// expected-LR series from it. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"
#include "orchestrator/store/run_history_queries.h"
#include "orchestrator/store/series_values.h"
#include "schema/lr_schedule.h"

namespace baton {

// The frozen run.yaml read back with the config parser itself (schema/run_config.h), without the
// filesystem checks (the dataset may be gone by now); unknown when it does not parse.
ExpectedSchedule ScheduleFromConfig(const std::string& yaml_text);

// The warmup an attempt ran, as 0-based step indices [from, until), clipped to the steps it
// reached: the trainer's schedule for the attempt's step0 and resume warmup (what its
// segment_start reported, when the config is unknown). The CLI's WARMUP column and the run
// page's shaded ranges both come from here.
WarmupRange AttemptWarmup(const AttemptRecord& a, const ExpectedSchedule& schedule,
                          std::optional<int64_t> reached_index);

struct TimelineSegment {
  int index = 0;  // 1-based attempt number
  AttemptRecord attempt;
  AttemptStepStats stats;
  int64_t step0 = 0;  // first step index the attempt computes
  // Steps [warmup_from, warmup_until) ran with a warmup factor; absent when none. Clipped to
  // the steps the attempt actually reached.
  std::optional<int64_t> warmup_from, warmup_until;
  std::string warmup_kind;  // "warmup" (the initial ramp) | "resume_warmup" (weights-only ramp)
  std::string label;        // "#1 fresh @ 0", "#3 preempted → resumed exact @ 1500"
  std::optional<double> duration_s;  // started → ended (or last step when still open)
};

// One segment per attempt; `stats` must be ReadAttemptStepStats of the same run (matched by id).
std::vector<TimelineSegment> BuildTimeline(const std::vector<AttemptRecord>& attempts,
                                           const std::vector<AttemptStepStats>& stats,
                                           const ExpectedSchedule& schedule);

struct RunAudit {
  int64_t effective_steps = 0;
  int64_t warmup_steps = 0;  // effective steps logged in_warmup
  double warmup_fraction = 0;
  std::optional<int64_t> expected_warmup_steps;  // min(W, effective_steps) when known
  int64_t nonfinite_steps = 0;                   // effective steps the trainer skipped (NaN/Inf)
  int64_t steps_redone = 0;                      // superseded rows
  double redone_compute_s = 0;                   // step time spent on them
  double requeue_hold_s = 0;  // sum of gaps between an attempt's end and the next one's start
  int64_t attempts = 0;
};

RunAudit BuildAudit(const std::vector<TimelineSegment>& segments, const ExpectedSchedule& schedule);

}  // namespace baton
