// DecideAfterExit: what the launcher does when the trainer exits (docs/design.md, "Exit codes").
//
//   0                      -> done (completed)
//   78 / 65                -> fail (config_error / data_error), never requeued
//   79                     -> fail (diverged: too many consecutive non-finite steps), never
//                             requeued; a resume would diverge again from the same checkpoint
//                             and data
//   78 / 65 / 79 win over a stop signal: the exit code says the run itself is broken, so a
//   requeue (even one the signal asked for) would only fail again
//   75, or any exit while the job was being stopped (the launcher got the warning signal)
//                          -> requeue (preempted, or timeout when the signal came within the
//                             warning lead of the job's time limit) while such requeues
//                             <= max_restarts, else fail (restart_budget)
//   anything else          -> a crash: fail (no_progress) when the last kCrashLoopLimit attempts
//                             all ended without finishing a step; else requeue while crashes
//                             <= max_failures, else fail (failure_budget)
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "orchestrator/launcher/attempt_history.h"
#include "schema/event_records.h"

namespace baton {

// Attempts in a row that crash without finishing a single optimizer step before the run is
// FAILED as a crash loop (preempted attempts neither count nor break the streak).
inline constexpr int kCrashLoopLimit = 3;

struct ExitDecision {
  ExitAction action = ExitAction::kFail;
  AttemptEndReason reason = AttemptEndReason::kCrashed;
  std::string detail;  // one line for logs
};

struct ExitContext {
  int exit_code = 0;
  bool stop_signalled = false;       // the launcher received the warning/stop signal
  bool near_time_limit = false;      // ... and the job was at its time limit (see NearTimeLimit)
  std::vector<PastAttempt> history;  // every attempt of the run; the last one is this attempt
  int64_t max_restarts = 0;
  int64_t max_failures = 0;
};

ExitDecision DecideAfterExit(const ExitContext& ctx);

// True when `now` (Unix seconds) is within `lead_s` (+ a few seconds) of the job's time limit,
// from scontrol's StartTime ("2026-11-29T19:10:00", local time) and TimeLimit ("00:10:00"): the
// warning signal then came from the time limit, not from a preemption. False for UNLIMITED.
bool NearTimeLimit(const std::string& start_time, const std::string& time_limit, double now,
                   int64_t lead_s);

}  // namespace baton
