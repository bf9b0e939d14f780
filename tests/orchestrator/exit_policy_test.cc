// The exit policy (orchestrator/launcher/exit_policy.h) alone: what the launcher does after the
// trainer exits, from the exit code, the stop signal and the run's past attempts.
#include "orchestrator/launcher/exit_policy.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace baton {
namespace {

PastAttempt Attempt(int64_t step0, std::optional<int64_t> last, const std::string& action = "",
                    const std::string& reason = "") {
  PastAttempt a;
  a.step0 = step0;
  a.last_step = last;
  a.action = action;
  a.reason = reason;
  a.ended = !action.empty();
  return a;
}

ExitDecision Decide(int code, std::vector<PastAttempt> history, bool signalled = false,
                    int64_t max_restarts = 100, int64_t max_failures = 3) {
  ExitContext c;
  c.exit_code = code;
  c.stop_signalled = signalled;
  c.history = std::move(history);
  c.max_restarts = max_restarts;
  c.max_failures = max_failures;
  return DecideAfterExit(c);
}

TEST(ExitPolicy, MapsExitCodes) {
  EXPECT_EQ(Decide(0, {Attempt(0, 10)}).action, ExitAction::kDone);
  ExitDecision preempt = Decide(75, {Attempt(0, 10)});
  EXPECT_EQ(preempt.action, ExitAction::kRequeue);
  EXPECT_EQ(preempt.reason, AttemptEndReason::kPreempted);
  EXPECT_EQ(Decide(78, {Attempt(0, 0)}).reason, AttemptEndReason::kConfigError);
  EXPECT_EQ(Decide(78, {Attempt(0, 0)}).action, ExitAction::kFail);
  EXPECT_EQ(Decide(65, {Attempt(0, 0)}).reason, AttemptEndReason::kDataError);
  ExitDecision crash = Decide(139, {Attempt(0, 10)});
  EXPECT_EQ(crash.action, ExitAction::kRequeue);
  EXPECT_EQ(crash.reason, AttemptEndReason::kCrashed);
  // Killed while being stopped (e.g. SIGKILL after the grace time) counts as preempted.
  EXPECT_EQ(Decide(137, {Attempt(0, 10)}, /*signalled=*/true).reason, AttemptEndReason::kPreempted);
}

TEST(ExitPolicy, AnUnhealthyNodeRequeuesWithoutSpendingCrashBudget) {
  // Three preflight failures in a row with max_failures=0: each is requeued (node_unhealthy).
  std::vector<PastAttempt> h = {Attempt(0, 0, "requeue", "node_unhealthy"),
                                Attempt(0, 0, "requeue", "node_unhealthy"), Attempt(0, 0)};
  ExitDecision d = Decide(76, h, false, /*max_restarts=*/100, /*max_failures=*/0);
  EXPECT_EQ(d.action, ExitAction::kRequeue);
  EXPECT_EQ(d.reason, AttemptEndReason::kNodeUnhealthy);
  // ...and they do not make a crash loop: a crash after them is the first crash.
  EXPECT_EQ(Decide(139, h, false, 100, /*max_failures=*/1).action, ExitAction::kRequeue);
  // They count with the preemptions against max_restarts.
  EXPECT_EQ(Decide(76, h, false, /*max_restarts=*/2).reason, AttemptEndReason::kRestartBudget);
  EXPECT_EQ(Decide(76, h, false, /*max_restarts=*/3).action, ExitAction::kRequeue);
}

TEST(ExitPolicy, DivergedIsNeverRequeued) {
  ExitDecision d = Decide(79, {Attempt(0, 120)});
  EXPECT_EQ(d.action, ExitAction::kFail);
  EXPECT_EQ(d.reason, AttemptEndReason::kDiverged);
  EXPECT_NE(d.detail.find("exit code 79"), std::string::npos) << d.detail;
  // Not a crash: plenty of failure budget left, a history of crashes, still no requeue.
  std::vector<PastAttempt> crashes = {Attempt(0, 5, "requeue", "crashed"), Attempt(5, 9)};
  EXPECT_EQ(Decide(79, crashes, false, 100, /*max_failures=*/100).reason,
            AttemptEndReason::kDiverged);
  // Not the first attempt either: after preemptions it still fails.
  std::vector<PastAttempt> preempted = {Attempt(0, 5, "requeue", "preempted"), Attempt(5, 9)};
  EXPECT_EQ(Decide(79, preempted).action, ExitAction::kFail);
}

TEST(ExitPolicy, BrokenRunCodesWinOverAStopSignal) {
  // The trainer exits 79/65/78 after the launcher forwarded a preemption or time-limit signal:
  // the exit code says the run is broken, so it fails instead of being requeued as preempted.
  for (const auto& [code, reason] : std::vector<std::pair<int, std::string>>{
           {79, "diverged"}, {65, "data_error"}, {78, "config_error"}}) {
    ExitContext c;
    c.exit_code = code;
    c.stop_signalled = true;
    c.history = {Attempt(0, 10)};
    c.max_restarts = 100;
    c.max_failures = 3;
    ExitDecision d = DecideAfterExit(c);
    EXPECT_EQ(d.action, ExitAction::kFail) << code;
    EXPECT_EQ(Name(d.reason), reason) << code;
    c.near_time_limit = true;  // the signal came at the time limit: same answer
    EXPECT_EQ(Name(DecideAfterExit(c).reason), reason) << code;
  }
  // Any other code after a stop signal is still the preemption (the control case).
  EXPECT_EQ(Decide(80, {Attempt(0, 10)}, /*signalled=*/true).reason, AttemptEndReason::kPreempted);
}

TEST(ExitPolicy, WarningAtTheTimeLimitIsATimeoutNotAPreemption) {
  ExitContext c;
  c.exit_code = 75;
  c.stop_signalled = true;
  c.near_time_limit = true;
  c.history = {Attempt(0, 5, "requeue", "timeout"), Attempt(5, 9)};
  c.max_restarts = 2;
  ExitDecision d = DecideAfterExit(c);
  EXPECT_EQ(d.action, ExitAction::kRequeue);
  EXPECT_EQ(d.reason, AttemptEndReason::kTimeout);
  c.max_restarts = 1;  // timeouts spend the same requeue budget as preemptions
  EXPECT_EQ(DecideAfterExit(c).reason, AttemptEndReason::kRestartBudget);

  // StartTime and TimeLimit as scontrol prints them (local time).
  const std::time_t now = std::time(nullptr);
  auto fmt = [](std::time_t t) {
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
    return std::string(buf);
  };
  // Started 9 minutes ago with a 10-minute limit and a 120 s warning: the time limit.
  EXPECT_TRUE(NearTimeLimit(fmt(now - 540), "00:10:00", double(now), /*lead_s=*/120));
  // Started 1 minute ago: a preemption.
  EXPECT_FALSE(NearTimeLimit(fmt(now - 60), "00:10:00", double(now), 120));
  EXPECT_TRUE(NearTimeLimit(fmt(now - 86400 - 3500), "1-01:00:00", double(now), 120));
  EXPECT_TRUE(NearTimeLimit(fmt(now - 590), "10:00", double(now), 60));
  EXPECT_FALSE(NearTimeLimit(fmt(now - 60), "UNLIMITED", double(now), 120));
}

TEST(ExitPolicy, RestartBudgetCapsPreemptionRequeues) {
  std::vector<PastAttempt> h = {Attempt(0, 5, "requeue", "preempted"),
                                Attempt(5, 9, "requeue", "preempted"), Attempt(9, 12)};
  EXPECT_EQ(Decide(75, h, false, /*max_restarts=*/3).action, ExitAction::kRequeue);
  ExitDecision d = Decide(75, h, false, /*max_restarts=*/2);
  EXPECT_EQ(d.action, ExitAction::kFail);
  EXPECT_EQ(d.reason, AttemptEndReason::kRestartBudget);
}

TEST(ExitPolicy, FailureBudgetCountsCrashes) {
  std::vector<PastAttempt> h = {Attempt(0, 5, "requeue", "crashed"),
                                Attempt(5, 9, "requeue", "crashed"), Attempt(9, 12)};
  EXPECT_EQ(Decide(1, h, false, 100, /*max_failures=*/3).action, ExitAction::kRequeue);
  ExitDecision d = Decide(1, h, false, 100, /*max_failures=*/2);
  EXPECT_EQ(d.action, ExitAction::kFail);
  EXPECT_EQ(d.reason, AttemptEndReason::kFailureBudget);
}

TEST(ExitPolicy, CrashLoopWithoutProgressFails) {
  // Two crashes at start, and this one too: no step finished in kCrashLoopLimit attempts.
  std::vector<PastAttempt> h = {Attempt(100, std::nullopt, "requeue", "crashed"),
                                Attempt(100, 100, "requeue", "crashed"),
                                Attempt(100, std::nullopt)};
  ExitDecision d = Decide(1, h, false, 100, /*max_failures=*/10);
  EXPECT_EQ(d.action, ExitAction::kFail);
  EXPECT_EQ(d.reason, AttemptEndReason::kNoProgress);
  // Progress in between resets the streak.
  h[1].last_step = 150;
  EXPECT_EQ(Decide(1, h, false, 100, 10).action, ExitAction::kRequeue);
}

}  // namespace
}  // namespace baton
