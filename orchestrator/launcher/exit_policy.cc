#include "orchestrator/launcher/exit_policy.h"

#include <cstdio>
#include <ctime>

#include "schema/exit_codes.h"

namespace baton {

ExitDecision DecideAfterExit(const ExitContext& ctx) {
  const std::string code = "exit code " + std::to_string(ctx.exit_code);
  if (ctx.exit_code == kExitOk)
    return {ExitAction::kDone, AttemptEndReason::kCompleted, "trainer reached its target"};
  if (ctx.exit_code == kExitConfig)
    return {ExitAction::kFail, AttemptEndReason::kConfigError,
            code + ": config error, not requeued"};
  if (ctx.exit_code == kExitData)
    return {ExitAction::kFail, AttemptEndReason::kDataError, code + ": data error, not requeued"};
  if (ctx.exit_code == kExitDiverged)
    return {ExitAction::kFail, AttemptEndReason::kDiverged,
            code + ": training diverged (non-finite steps), not requeued"};

  // Earlier attempts: everything but the last entry (this attempt).
  const size_t n_past = ctx.history.empty() ? 0 : ctx.history.size() - 1;
  // Requeues that were not the run's fault: preemptions, time limits, unhealthy nodes.
  int64_t preempt_requeues = 1;  // this one
  for (size_t i = 0; i < n_past; ++i) {
    const PastAttempt& a = ctx.history[i];
    if (a.action == Name(ExitAction::kRequeue) &&
        (a.reason == Name(AttemptEndReason::kPreempted) ||
         a.reason == Name(AttemptEndReason::kTimeout) ||
         a.reason == Name(AttemptEndReason::kNodeUnhealthy))) {
      ++preempt_requeues;
    }
  }
  if (ctx.exit_code == kExitNodeUnhealthy && !ctx.stop_signalled) {
    if (preempt_requeues > ctx.max_restarts) {
      return {ExitAction::kFail, AttemptEndReason::kRestartBudget,
              code + ": a node failed the preflight, but max_restarts=" +
                  std::to_string(ctx.max_restarts) + " requeues are used"};
    }
    return {ExitAction::kRequeue, AttemptEndReason::kNodeUnhealthy,
            code + ": a node failed the preflight; requeue " + std::to_string(preempt_requeues) +
                " of " + std::to_string(ctx.max_restarts) + " (no crash budget spent)"};
  }
  if (ctx.exit_code == kExitRequeue || ctx.stop_signalled) {
    if (preempt_requeues > ctx.max_restarts) {
      return {
          ExitAction::kFail, AttemptEndReason::kRestartBudget,
          code + ": preempted, but " + std::to_string(preempt_requeues - 1) +
              " preemption requeues already used max_restarts=" + std::to_string(ctx.max_restarts)};
    }
    return {ExitAction::kRequeue,
            ctx.near_time_limit ? AttemptEndReason::kTimeout : AttemptEndReason::kPreempted,
            code + ": stopped on a signal" + (ctx.near_time_limit ? " at the time limit" : "") +
                ", requeue " + std::to_string(preempt_requeues) + " of " +
                std::to_string(ctx.max_restarts)};
  }

  // A crash. Crash loop: this and the attempts before it that crashed without progress.
  int streak = 0;
  for (size_t i = ctx.history.size(); i-- > 0;) {
    const PastAttempt& a = ctx.history[i];
    const bool is_this = i + 1 == ctx.history.size();
    if (a.made_progress()) break;
    if (!is_this && (a.reason == Name(AttemptEndReason::kPreempted) ||
                     a.reason == Name(AttemptEndReason::kTimeout) ||
                     a.reason == Name(AttemptEndReason::kNodeUnhealthy)))
      continue;
    ++streak;
  }
  const AttemptEndReason crash_reason =
      ctx.hang ? AttemptEndReason::kHang : AttemptEndReason::kCrashed;
  const std::string what = ctx.hang ? "hang" : "crash";
  if (streak >= kCrashLoopLimit) {
    return {ExitAction::kFail, AttemptEndReason::kNoProgress,
            code + ": " + std::to_string(streak) +
                " attempts in a row crashed without finishing an optimizer step"};
  }
  int64_t crashes = 1;
  for (size_t i = 0; i < n_past; ++i) {
    const PastAttempt& a = ctx.history[i];
    if (a.action != Name(ExitAction::kRestart) &&
        (a.reason == Name(AttemptEndReason::kCrashed) || a.reason == Name(AttemptEndReason::kHang)))
      ++crashes;
  }
  if (crashes > ctx.max_failures) {
    return {ExitAction::kFail, AttemptEndReason::kFailureBudget,
            code + ": " + what + " " + std::to_string(crashes) +
                " exceeds max_failures=" + std::to_string(ctx.max_failures)};
  }
  return {ExitAction::kRequeue, crash_reason,
          code + ": " + what + " " + std::to_string(crashes) +
              " of max_failures=" + std::to_string(ctx.max_failures) + ", requeue"};
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
