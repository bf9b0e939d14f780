// The reconcile verdict (orchestrator/reconcile/reconcile_verdict.h) alone, row by row: what the
// sync pass does to an active run from SLURM's record of its job and the run's attempts, with no
// store and no SLURM. reconcile_test.cc checks the same rows applied to a store.
#include "orchestrator/reconcile/reconcile_verdict.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/slurm/job_state.h"

namespace baton {
namespace {

constexpr int64_t kTarget = 10;

RunRecord ActiveRun(RunStatus status = RunStatus::kRunning, const std::string& reason = "") {
  RunRecord run;
  run.id = 3;
  run.job_id = "7";
  run.status = status;
  run.reason = reason;
  run.target_steps = kTarget;
  run.run_dir = "/runs/r";
  return run;
}

// An attempt of job 7's start `restart`, `last` steps finished; ended when `action` is given.
AttemptRecord Attempt(int64_t restart, std::optional<int64_t> last, const std::string& action = "",
                      const std::string& reason = "", const std::string& message = "") {
  AttemptRecord a;
  a.job_id = "7";
  a.restart_count = restart;
  a.last_step = last;
  a.action = action;
  a.end_reason = reason;
  a.trainer_message = message;
  return a;
}

JobInfo Job(const std::string& state, int64_t restarts = 0, const std::string& exit_code = "0:0") {
  JobInfo j;
  j.job_id = "7";
  j.state = state;
  j.restarts = restarts;
  j.exit_code = exit_code;
  return j;
}

ReconcileVerdict Decide(const std::optional<JobInfo>& job, const std::vector<AttemptRecord>& a,
                        const RunRecord& run = ActiveRun()) {
  return DecideReconcile(run, job, a);
}

void ExpectStatus(const ReconcileVerdict& v, RunStatus status, const std::string& reason,
                  bool names_gone_folder = false) {
  ASSERT_TRUE(v.status.has_value());
  EXPECT_EQ(Name(*v.status), std::string(Name(status)));
  EXPECT_EQ(v.reason, reason);
  EXPECT_EQ(v.reason_names_gone_folder, names_gone_folder);
}

// Exactly one close, of attempt `index`, recording `state`, ending it as `reason`.
void ExpectOneClose(const ReconcileVerdict& v, size_t index, const std::string& state,
                    AttemptEndReason reason) {
  ASSERT_EQ(v.close.size(), 1u);
  EXPECT_EQ(v.close[0].attempt, index);
  EXPECT_EQ(v.close[0].slurm_state, state);
  EXPECT_EQ(Name(v.close[0].reason), std::string(Name(reason)));
}

TEST(ReconcileVerdict, GoneJobOfAFinishedRunCompletesIt) {
  // Done by the launcher's word, or by the steps alone; nothing to close either way.
  for (const AttemptRecord& last : {Attempt(0, 4, "done", "completed"), Attempt(0, kTarget)}) {
    const ReconcileVerdict v = Decide(std::nullopt, {last});
    ExpectStatus(v, RunStatus::kCompleted, "");
    EXPECT_TRUE(v.close.empty());
    EXPECT_FALSE(v.record_state.has_value());
  }
}

TEST(ReconcileVerdict, GoneJobLosesAnOpenAttemptAndFailsTheRun) {
  const ReconcileVerdict v =
      Decide(std::nullopt, {Attempt(0, 2, "requeue", "preempted"), Attempt(1, 4, "", "", "OOM")});
  ExpectOneClose(v, 1, "UNKNOWN", AttemptEndReason::kLost);
  ExpectStatus(v, RunStatus::kFailed,
               "SLURM job 7 is gone and the run stopped at step 4 of 10: OOM");
}

TEST(ReconcileVerdict, GoneJobLeavesAnEndedAttemptAsItIs) {
  const ReconcileVerdict ended = Decide(std::nullopt, {Attempt(0, 4, "requeue", "preempted")});
  EXPECT_TRUE(ended.close.empty());
  ExpectStatus(ended, RunStatus::kFailed,
               "SLURM job 7 is gone and the run stopped at step 4 of 10");
  // No attempt at all: step 0.
  const ReconcileVerdict none = Decide(std::nullopt, {});
  EXPECT_TRUE(none.close.empty());
  ExpectStatus(none, RunStatus::kFailed, "SLURM job 7 is gone and the run stopped at step 0 of 10");
}

TEST(ReconcileVerdict, EarlierStartsOfTheJobAreClosedAsRequeuedBySlurm) {
  AttemptRecord other_job = Attempt(0, 1, "fail", "crashed");
  other_job.job_id = "5";
  const std::vector<AttemptRecord> attempts = {other_job, Attempt(0, 2), Attempt(1, 3, "requeue"),
                                               Attempt(2, 4)};
  const ReconcileVerdict v = Decide(Job("RUNNING", /*restarts=*/2), attempts);
  // Every start below Restarts, ended or not (an ended one only takes the state), in order;
  // never another job's attempt, never the present start's.
  ASSERT_EQ(v.close.size(), 2u);
  EXPECT_EQ(v.close[0].attempt, 1u);
  EXPECT_EQ(v.close[1].attempt, 2u);
  for (const AttemptClose& c : v.close) {
    EXPECT_EQ(c.slurm_state, "REQUEUED");
    EXPECT_EQ(c.reason, AttemptEndReason::kPreempted);
  }
  EXPECT_EQ(v.record_state, std::optional<size_t>(3));
  ExpectStatus(v, RunStatus::kRunning, "");
}

TEST(ReconcileVerdict, AWaitingJobIsPendingOrRequeued) {
  for (const char* state : {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED"}) {
    SCOPED_TRACE(state);
    ExpectStatus(Decide(Job(state), {}), RunStatus::kPending, "");
    const ReconcileVerdict v = Decide(Job(state, 1), {Attempt(0, 4, "requeue", "preempted")});
    ExpectOneClose(v, 0, "REQUEUED", AttemptEndReason::kPreempted);
    ExpectStatus(v, RunStatus::kRequeued, "requeued");
    // A run already REQUEUED keeps the reason ingest gave it.
    const ReconcileVerdict kept = Decide(Job(state, 1), {Attempt(0, 4, "requeue", "preempted")},
                                         ActiveRun(RunStatus::kRequeued, "preempted at step 4"));
    ExpectStatus(kept, RunStatus::kRequeued, "preempted at step 4");
  }
}

TEST(ReconcileVerdict, AStartUnderWayIsRunningAndRecordsItsState) {
  for (const char* state : {"RUNNING", "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT"}) {
    SCOPED_TRACE(state);
    const ReconcileVerdict v = Decide(Job(state), {Attempt(0, 4)});
    EXPECT_TRUE(v.close.empty());
    EXPECT_EQ(v.record_state, std::optional<size_t>(0));
    ExpectStatus(v, RunStatus::kRunning, "");
  }
  // Before the new start's attempt exists, no attempt records it.
  const ReconcileVerdict early = Decide(Job("RUNNING", 1), {Attempt(0, 4, "requeue", "preempted")});
  EXPECT_FALSE(early.record_state.has_value());
  ExpectStatus(early, RunStatus::kRunning, "");
}

TEST(ReconcileVerdict, CompletingWaitsForTheFinalState) {
  const ReconcileVerdict v = Decide(Job("COMPLETING"), {Attempt(0, 4)});
  EXPECT_TRUE(v.close.empty());
  EXPECT_FALSE(v.record_state.has_value());
  EXPECT_FALSE(v.status.has_value());
}

TEST(ReconcileVerdict, PreemptionAndNodeFailureRequeue) {
  const ReconcileVerdict p = Decide(Job("PREEMPTED"), {Attempt(0, 4)});
  ExpectOneClose(p, 0, "PREEMPTED", AttemptEndReason::kPreempted);
  ExpectStatus(p, RunStatus::kRequeued, "preempted");
  const ReconcileVerdict n = Decide(Job("NODE_FAIL"), {Attempt(0, 4)});
  ExpectOneClose(n, 0, "NODE_FAIL", AttemptEndReason::kNodeFailure);
  ExpectStatus(n, RunStatus::kRequeued, "node_failure");
  // No attempt of this start yet: only the run's status moves.
  const ReconcileVerdict none = Decide(Job("PREEMPTED"), {});
  EXPECT_TRUE(none.close.empty());
  ExpectStatus(none, RunStatus::kRequeued, "preempted");
}

TEST(ReconcileVerdict, CompletedJobCompletesTheRunOnlyAtItsTarget) {
  const ReconcileVerdict reached = Decide(Job("COMPLETED"), {Attempt(0, kTarget)});
  ExpectOneClose(reached, 0, "COMPLETED", AttemptEndReason::kCompleted);
  ExpectStatus(reached, RunStatus::kCompleted, "");
  // The launcher said done: completed, though the attempt's own end is a crash by the steps.
  const ReconcileVerdict done = Decide(Job("COMPLETED"), {Attempt(0, 4, "done", "completed")});
  ExpectOneClose(done, 0, "COMPLETED", AttemptEndReason::kCrashed);
  ExpectStatus(done, RunStatus::kCompleted, "");
  const ReconcileVerdict short_of_it = Decide(Job("COMPLETED"), {Attempt(0, 4, "", "", "boom")});
  ExpectOneClose(short_of_it, 0, "COMPLETED", AttemptEndReason::kCrashed);
  ExpectStatus(short_of_it, RunStatus::kFailed, "job 7 ended at step 4 of 10: boom",
               /*names_gone_folder=*/true);
}

TEST(ReconcileVerdict, CancelledInSlurm) {
  // SLURM's words as it printed them are what the attempt records.
  const ReconcileVerdict v = Decide(Job("CANCELLED by 0"), {Attempt(0, 4)});
  ExpectOneClose(v, 0, "CANCELLED by 0", AttemptEndReason::kCancelled);
  ExpectStatus(v, RunStatus::kCancelled, "cancelled in SLURM");
}

TEST(ReconcileVerdict, TimeLimitFailsTheRun) {
  const ReconcileVerdict v = Decide(Job("TIMEOUT"), {Attempt(0, 4, "", "", "slow")});
  ExpectOneClose(v, 0, "TIMEOUT", AttemptEndReason::kTimeout);
  ExpectStatus(v, RunStatus::kFailed, "job 7 hit its time limit at step 4: slow");
}

TEST(ReconcileVerdict, AFailedEndFailsTheRunUnlessIngestAlreadyDid) {
  for (const char* state : {"FAILED", "OUT_OF_MEMORY", "DEADLINE"}) {
    SCOPED_TRACE(state);
    const ReconcileVerdict v = Decide(Job(state, 0, "1:0"), {Attempt(0, 4)});
    ExpectOneClose(v, 0, state, AttemptEndReason::kCrashed);
    ExpectStatus(v, RunStatus::kFailed,
                 "job 7 " + std::string(state) + " (exit code 1:0) at step 4",
                 /*names_gone_folder=*/true);
  }
  const ReconcileVerdict boot = Decide(Job("BOOT_FAIL"), {});
  EXPECT_TRUE(boot.close.empty());
  ExpectStatus(boot, RunStatus::kFailed, "job 7 BOOT_FAIL (exit code 0:0) at step 0",
               /*names_gone_folder=*/true);
  const ReconcileVerdict boot_open = Decide(Job("BOOT_FAIL"), {Attempt(0, std::nullopt)});
  ExpectOneClose(boot_open, 0, "BOOT_FAIL", AttemptEndReason::kNodeFailure);
  // The launcher failed the attempt: ingest set the run's reason, which stays.
  const ReconcileVerdict failed = Decide(Job("FAILED"), {Attempt(0, 4, "fail", "config_error")});
  ExpectOneClose(failed, 0, "FAILED", AttemptEndReason::kCrashed);
  EXPECT_FALSE(failed.status.has_value());
}

TEST(ReconcileVerdict, EveryStateWordHasItsRow) {
  // The states that leave the run's status alone; every other word SLURM prints moves it.
  const std::vector<JobState> leave = {JobState::kCompleting, JobState::kResvDelHold,
                                       JobState::kUnknown};
  for (const Word<JobState>& w : Vocabulary<JobState>::kWords) {
    SCOPED_TRACE(w.name);
    const ReconcileVerdict v = Decide(Job(w.name), {Attempt(0, 4)});
    const bool left = std::find(leave.begin(), leave.end(), w.value) != leave.end();
    EXPECT_EQ(v.status.has_value(), !left);
    // Only a start over closes the present attempt; an ended start's state is final.
    EXPECT_EQ(!v.close.empty(), IsStartOver(w.value));
  }
  const ReconcileVerdict unknown_word = Decide(Job("NO_SUCH_STATE"), {Attempt(0, 4)});
  EXPECT_FALSE(unknown_word.status.has_value());
  EXPECT_TRUE(unknown_word.close.empty());
}

}  // namespace
}  // namespace baton
