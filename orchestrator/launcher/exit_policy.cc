#include "orchestrator/launcher/exit_policy.h"

#include <cstdio>
#include <ctime>

#include "schema/exit_codes.h"

namespace baton {

namespace {

// Why an attempt ended without its own fault: a preemption, a time limit, an unhealthy node.
bool NotTheRunsFault(const std::string& reason) {
  return reason == Name(AttemptEndReason::kPreempted) ||
         reason == Name(AttemptEndReason::kTimeout) ||
         reason == Name(AttemptEndReason::kNodeUnhealthy);
}

// Earlier attempts: everything in the history but the last entry (this attempt).
size_t PastAttempts(const ExitContext& ctx) {
  return ctx.history.empty() ? 0 : ctx.history.size() - 1;
}

// Requeues that were not the run's fault, this one included: what max_restarts bounds.
int64_t PreemptRequeues(const ExitContext& ctx) {
  int64_t n = 1;
  for (size_t i = 0; i < PastAttempts(ctx); ++i) {
    const PastAttempt& a = ctx.history[i];
    if (a.action == Name(ExitAction::kRequeue) && NotTheRunsFault(a.reason)) ++n;
  }
  return n;
}

// Crashes and hangs that were requeued (not restarted in the job), this one included: what
// max_failures bounds.
int64_t RequeuedCrashes(const ExitContext& ctx) {
  int64_t n = 1;
  for (size_t i = 0; i < PastAttempts(ctx); ++i) {
    const PastAttempt& a = ctx.history[i];
    if (a.action != Name(ExitAction::kRestart) &&
        (a.reason == Name(AttemptEndReason::kCrashed) || a.reason == Name(AttemptEndReason::kHang)))
      ++n;
  }
  return n;
}

// This attempt and the ones right before it that crashed without finishing a step; earlier
// attempts that were not the run's fault neither count nor break the streak.
int CrashStreak(const ExitContext& ctx) {
  int streak = 0;
  for (size_t i = ctx.history.size(); i-- > 0;) {
    const PastAttempt& a = ctx.history[i];
    const bool is_this = i + 1 == ctx.history.size();
    if (a.made_progress()) break;
    if (!is_this && NotTheRunsFault(a.reason)) continue;
    ++streak;
  }
  return streak;
}

// 0, 78, 65, 79: decided by the code alone, a stop signal or not; nullopt for any other code.
std::optional<ExitDecision> DecideByCode(int exit_code, const std::string& code) {
  if (exit_code == kExitOk)
    return ExitDecision{ExitAction::kDone, AttemptEndReason::kCompleted,
                        "trainer reached its target"};
  if (exit_code == kExitConfig)
    return ExitDecision{ExitAction::kFail, AttemptEndReason::kConfigError,
                        code + ": config error, not requeued"};
  if (exit_code == kExitData)
    return ExitDecision{ExitAction::kFail, AttemptEndReason::kDataError,
                        code + ": data error, not requeued"};
  if (exit_code == kExitDiverged)
    return ExitDecision{ExitAction::kFail, AttemptEndReason::kDiverged,
                        code + ": training diverged (non-finite steps), not requeued"};
  return std::nullopt;
}

// 76 without a stop signal: a node failed the preflight.
ExitDecision DecideUnhealthyNode(const ExitContext& ctx, const std::string& code) {
  const int64_t requeues = PreemptRequeues(ctx);
  if (requeues > ctx.max_restarts) {
    return {ExitAction::kFail, AttemptEndReason::kRestartBudget,
            code + ": a node failed the preflight, but max_restarts=" +
                std::to_string(ctx.max_restarts) + " requeues are used"};
  }
  return {ExitAction::kRequeue, AttemptEndReason::kNodeUnhealthy,
          code + ": a node failed the preflight; requeue " + std::to_string(requeues) + " of " +
              std::to_string(ctx.max_restarts) + " (no crash budget spent)"};
}

// 75, or any exit while the job was being stopped.
ExitDecision DecideStopped(const ExitContext& ctx, const std::string& code) {
  const int64_t requeues = PreemptRequeues(ctx);
  if (requeues > ctx.max_restarts) {
    return {
        ExitAction::kFail, AttemptEndReason::kRestartBudget,
        code + ": preempted, but " + std::to_string(requeues - 1) +
            " preemption requeues already used max_restarts=" + std::to_string(ctx.max_restarts)};
  }
  return {ExitAction::kRequeue,
          ctx.near_time_limit ? AttemptEndReason::kTimeout : AttemptEndReason::kPreempted,
          code + ": stopped on a signal" + (ctx.near_time_limit ? " at the time limit" : "") +
              ", requeue " + std::to_string(requeues) + " of " + std::to_string(ctx.max_restarts)};
}

// Anything else: a crash, or a hang the watch ended.
ExitDecision DecideCrash(const ExitContext& ctx, const std::string& code) {
  const int streak = CrashStreak(ctx);
  if (streak >= kCrashLoopLimit) {
    return {ExitAction::kFail, AttemptEndReason::kNoProgress,
            code + ": " + std::to_string(streak) +
                " attempts in a row crashed without finishing an optimizer step"};
  }
  const std::string what = ctx.hang ? "hang" : "crash";
  const int64_t crashes = RequeuedCrashes(ctx);
  if (crashes > ctx.max_failures) {
    return {ExitAction::kFail, AttemptEndReason::kFailureBudget,
            code + ": " + what + " " + std::to_string(crashes) +
                " exceeds max_failures=" + std::to_string(ctx.max_failures)};
  }
  return {ExitAction::kRequeue, ctx.hang ? AttemptEndReason::kHang : AttemptEndReason::kCrashed,
          code + ": " + what + " " + std::to_string(crashes) +
              " of max_failures=" + std::to_string(ctx.max_failures) + ", requeue"};
}

}  // namespace

ExitDecision DecideAfterExit(const ExitContext& ctx) {
  const std::string code = "exit code " + std::to_string(ctx.exit_code);
  if (std::optional<ExitDecision> d = DecideByCode(ctx.exit_code, code)) return *d;
  if (ctx.exit_code == kExitNodeUnhealthy && !ctx.stop_signalled)
    return DecideUnhealthyNode(ctx, code);
  if (ctx.exit_code == kExitRequeue || ctx.stop_signalled) return DecideStopped(ctx, code);
  return DecideCrash(ctx, code);
}

RestartCause RestartCauseOf(int exit_code, bool stop_signalled, bool hang) {
  // A job being stopped (preemption, time limit, cancel) is never restarted inside itself.
  if (stop_signalled) return RestartCause::kNone;
  if (hang) return RestartCause::kHang;
  if (exit_code == kExitInternal || (exit_code > 128 && exit_code <= 128 + 64))
    return RestartCause::kCrash;
  return RestartCause::kNone;
}

std::optional<ExitDecision> DecideInJobRestart(const InJobContext& ctx) {
  if (ctx.cause == RestartCause::kNone) return std::nullopt;
  const AttemptEndReason reason =
      ctx.cause == RestartCause::kHang ? AttemptEndReason::kHang : AttemptEndReason::kCrashed;
  if (ctx.stalled_restarts >= kInJobStallLimit) {
    return ExitDecision{ExitAction::kFail, AttemptEndReason::kNoProgress,
                        std::string(Name(ctx.cause)) + " after " +
                            std::to_string(ctx.stalled_restarts) +
                            " restarts in a row inside the job that did not advance the newest "
                            "checkpoint; not restarted, not requeued"};
  }
  if (ctx.in_job_seq >= ctx.in_job_restarts) return std::nullopt;
  return ExitDecision{ExitAction::kRestart, reason,
                      std::string(Name(ctx.cause)) + ": restart " +
                          std::to_string(ctx.in_job_seq + 1) + " of slurm.in_job_restarts=" +
                          std::to_string(ctx.in_job_restarts) + " inside the allocation"};
}

namespace {

// scontrol's TimeLimit: "[D-]HH:MM:SS", "MM:SS" or "UNLIMITED" (-1: none).
int64_t LimitSeconds(const std::string& limit) {
  int64_t days = 0, h = 0, m = 0, sec = 0;
  const char* c = limit.c_str();
  if (std::sscanf(c, "%ld-%ld:%ld:%ld", &days, &h, &m, &sec) == 4)
    return ((days * 24 + h) * 60 + m) * 60 + sec;
  if (std::sscanf(c, "%ld:%ld:%ld", &h, &m, &sec) == 3) return (h * 60 + m) * 60 + sec;
  if (std::sscanf(c, "%ld:%ld", &m, &sec) == 2) return m * 60 + sec;
  return -1;
}

}  // namespace

bool NearTimeLimit(const std::string& start_time, const std::string& time_limit, double now,
                   int64_t lead_s) {
  // SLURM sends the warning lead_s before StartTime + TimeLimit and the launcher looks after the
  // trainer has finished its step and saved, so at a time limit now >= that - lead_s; a
  // preemption comes earlier. (EndTime is no help: a preemption with GraceTime moves it.)
  // The margin covers the timestamps' whole-second resolution.
  constexpr double kMarginS = 5;
  const int64_t limit = LimitSeconds(time_limit);
  std::tm tm{};
  if (limit < 0 || strptime(start_time.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return false;
  tm.tm_isdst = -1;
  const double end = double(std::mktime(&tm)) + double(limit);
  return now >= end - double(lead_s) - kMarginS;
}

}  // namespace baton
