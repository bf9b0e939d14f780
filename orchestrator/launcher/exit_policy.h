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
//   76                     -> requeue (node_unhealthy: a node failed the preflight), counted
//                             with preemption requeues against max_restarts, never against
//                             max_failures, else fail (restart_budget)
//   anything else          -> a crash: fail (no_progress) when the last kCrashLoopLimit attempts
//                             all ended without finishing a step; else requeue while crashes
//                             <= max_failures, else fail (failure_budget)
//   a hang (the launcher's watch ended the trainer) is judged like a crash, reason hang
// Crashes and hangs count toward max_failures only when they were requeued: restarts inside the
// allocation (DecideInJobRestart) have their own budget, slurm.in_job_restarts.
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/launcher/attempt_history.h"
#include "schema/event_records.h"

namespace baton {

// Attempts in a row that crash without finishing a single optimizer step before the run is
// FAILED as a crash loop (preempted attempts neither count nor break the streak).
inline constexpr int kCrashLoopLimit = 3;
// Restarts in a row inside one job start that did not advance the newest checkpoint before the
// run is FAILED (no_progress) instead of restarted or requeued.
inline constexpr int kInJobStallLimit = 2;

struct ExitDecision {
  ExitAction action = ExitAction::kFail;
  AttemptEndReason reason = AttemptEndReason::kCrashed;
  std::string detail;  // one line for logs
};

struct ExitContext {
  int exit_code = 0;
  bool hang = false;                 // the hang watch ended the trainer
  bool stop_signalled = false;       // the launcher received the warning/stop signal
  bool near_time_limit = false;      // ... and the job was at its time limit (see NearTimeLimit)
  std::vector<PastAttempt> history;  // every attempt of the run; the last one is this attempt
  int64_t max_restarts = 0;
  int64_t max_failures = 0;
};

ExitDecision DecideAfterExit(const ExitContext& ctx);

// ---- Restarts inside the allocation (docs/orchestrator.md, "Restarts inside the job"). ----

// Why the trainer may be started again in the same allocation: a hang, or a crash that is not
// the run's own fault (a rank killed by a signal: exit 128+N; an internal error such as a lost
// collective peer: exit 70). Config (78), data (65), divergence (79), a stop signal (75, or any
// exit after a forwarded signal, even a hang) and anything else are never restarted in the job.
enum class RestartCause { kNone, kHang, kCrash };
// "" | hang | crash (Name: schema/vocabularies.h), the events' restart_cause.
template <>
struct Vocabulary<RestartCause> {
  static constexpr Word<RestartCause> kWords[] = {
      {RestartCause::kNone, ""}, {RestartCause::kHang, "hang"}, {RestartCause::kCrash, "crash"}};
};
RestartCause RestartCauseOf(int exit_code, bool stop_signalled, bool hang);

struct InJobContext {
  RestartCause cause = RestartCause::kNone;
  int64_t in_job_seq = 0;       // of the attempt that just ended
  int64_t in_job_restarts = 0;  // slurm.in_job_restarts
  // Restarts in a row (the ended attempt included when it is one) that did not advance the
  // newest valid checkpoint's step.
  int64_t stalled_restarts = 0;
};

// A restart (action restart, reason hang/crashed), a failure (no_progress: two restarts in a
// row did not advance the newest checkpoint's step), or nullopt: the exit policy decides
// (DecideAfterExit; the in-job budget is spent or the cause is not one).
std::optional<ExitDecision> DecideInJobRestart(const InJobContext& ctx);

// True when `now` (Unix seconds) is within `lead_s` (+ a few seconds) of the job's time limit,
// from scontrol's StartTime ("2026-11-29T19:10:00", local time) and TimeLimit ("00:10:00"): the
// warning signal then came from the time limit, not from a preemption. False for UNLIMITED.
bool NearTimeLimit(const std::string& start_time, const std::string& time_limit, double now,
                   int64_t lead_s);

}  // namespace baton
