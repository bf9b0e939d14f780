// The decisions of eval.mode job as pure functions (eval_job_plan.h): which checkpoints get a
// job, the one retry, the report, and never a second job for a checkpoint that has one.
#include "orchestrator/reconcile/eval_job_plan.h"

#include <gtest/gtest.h>

namespace baton {
namespace {

EvalJobRecord Row(int64_t id, int64_t step, int64_t attempt, const std::string& state,
                  bool reported = false) {
  EvalJobRecord r;
  r.id = id;
  r.run_id = 1;
  r.step = step;
  r.attempt = attempt;
  r.job_id = std::to_string(100 + id);
  r.state = state;
  r.reason = state == kEvalJobFailed ? "job ended FAILED (exit 1:0)" : "";
  r.reported = reported;
  return r;
}

std::vector<std::pair<int64_t, int64_t>> Submits(const std::vector<EvalJobAction>& actions) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const EvalJobAction& a : actions) {
    if (a.kind == EvalJobAction::Kind::kSubmit) out.emplace_back(a.step, a.attempt);
  }
  return out;
}

std::vector<int64_t> Reports(const std::vector<EvalJobAction>& actions) {
  std::vector<int64_t> out;
  for (const EvalJobAction& a : actions) {
    if (a.kind == EvalJobAction::Kind::kReport) out.push_back(a.row_id);
  }
  return out;
}

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

TEST(EvalJobPlan, EveryTargetWithoutResultOrJobGetsItsFirstJob) {
  const auto actions = PlanEvalJobs({2, 4, 6}, {}, {});
  EXPECT_EQ(Submits(actions), (Pairs{{2, 1}, {4, 1}, {6, 1}}));
  EXPECT_TRUE(Reports(actions).empty());
}

TEST(EvalJobPlan, AnEvaluatedCheckpointNeverGetsAJob) {
  EXPECT_EQ(Submits(PlanEvalJobs({2, 4, 6}, {2, 6}, {})), (Pairs{{4, 1}}));
  // Evaluated after a failure, or by hand: no retry, no report.
  const auto actions = PlanEvalJobs({2}, {2}, {Row(1, 2, 2, kEvalJobFailed)});
  EXPECT_TRUE(actions.empty());
}

TEST(EvalJobPlan, ALiveOrFinishedJobIsNeverJoinedByASecond) {
  const std::vector<EvalJobRecord> jobs = {
      Row(1, 2, 1, kEvalJobPending), Row(2, 4, 1, kEvalJobRunning), Row(3, 6, 1, kEvalJobDone)};
  // Step 6's result file is gone (deleted by hand): its done row still ends its story.
  EXPECT_EQ(Submits(PlanEvalJobs({2, 4, 6, 8}, {}, jobs)), (Pairs{{8, 1}}));
  // The same rows on every later pass (a watch restarted, another login node): the same answer.
  for (int pass = 0; pass < 3; ++pass) {
    EXPECT_EQ(Submits(PlanEvalJobs({2, 4, 6, 8}, {}, jobs)), (Pairs{{8, 1}}));
  }
}

TEST(EvalJobPlan, AFailedFirstJobIsRetriedOnceThenReportedOnce) {
  EXPECT_EQ(Submits(PlanEvalJobs({2}, {}, {Row(1, 2, 1, kEvalJobFailed)})), (Pairs{{2, 2}}));
  const std::vector<EvalJobRecord> retry_live = {Row(1, 2, 1, kEvalJobFailed),
                                                 Row(2, 2, 2, kEvalJobRunning)};
  EXPECT_TRUE(PlanEvalJobs({2}, {}, retry_live).empty());
  const std::vector<EvalJobRecord> both_failed = {Row(1, 2, 1, kEvalJobFailed),
                                                  Row(2, 2, 2, kEvalJobFailed)};
  const auto actions = PlanEvalJobs({2}, {}, both_failed);
  EXPECT_TRUE(Submits(actions).empty());
  EXPECT_EQ(Reports(actions), (std::vector<int64_t>{2}));
  EXPECT_EQ(actions.front().reason, "job ended FAILED (exit 1:0)");
  const std::vector<EvalJobRecord> reported = {Row(1, 2, 1, kEvalJobFailed),
                                               Row(2, 2, 2, kEvalJobFailed, true)};
  EXPECT_TRUE(PlanEvalJobs({2}, {}, reported).empty());
}

TEST(EvalJobPlan, AFailingCheckpointHoldsBackNoOther) {
  const std::vector<EvalJobRecord> jobs = {
      Row(1, 2, 1, kEvalJobFailed), Row(2, 2, 2, kEvalJobFailed), Row(3, 4, 1, kEvalJobFailed)};
  const auto actions = PlanEvalJobs({2, 4, 6}, {}, jobs);
  EXPECT_EQ(Submits(actions), (Pairs{{4, 2}, {6, 1}}));
  EXPECT_EQ(Reports(actions), (std::vector<int64_t>{2}));
}

TEST(EvalJobPlan, AnUnverifiedCheckpointIsNeverSubmitted) {
  EXPECT_TRUE(PlanEvalJobs({2}, {}, {Row(1, 2, 0, kEvalJobUnverified)}).empty());
}

TEST(EvalJobPlan, AFailedRetryIsReportedEvenAfterRetentionRemovedItsCheckpoint) {
  const std::vector<EvalJobRecord> jobs = {Row(1, 2, 1, kEvalJobFailed),
                                           Row(2, 2, 2, kEvalJobFailed)};
  EXPECT_EQ(Reports(PlanEvalJobs({}, {}, jobs)), (std::vector<int64_t>{2}));
  // ... but a first failure of a removed checkpoint is not retried.
  EXPECT_TRUE(PlanEvalJobs({}, {}, {Row(1, 2, 1, kEvalJobFailed)}).empty());
}

TEST(EvalJobState, AResultWinsOverAnySlurmState) {
  JobInfo job;
  job.state = "FAILED";
  const EvalJobRecord next =
      NextEvalJobState(Row(1, 2, 1, kEvalJobRunning), job, /*evaluated=*/true, "", 5);
  EXPECT_EQ(next.state, kEvalJobDone);
  EXPECT_EQ(next.updated_at, 5);
}

TEST(EvalJobState, ARequeuedOrPreemptedJobStaysPending) {
  for (const char* state : {"PENDING", "REQUEUED", "PREEMPTED", "REQUEUE_HOLD"}) {
    JobInfo job;
    job.state = state;
    EXPECT_EQ(NextEvalJobState(Row(1, 2, 1, kEvalJobRunning), job, false, "", 5).state,
              kEvalJobPending)
        << state;
  }
  JobInfo running;
  running.state = "RUNNING";
  EXPECT_EQ(NextEvalJobState(Row(1, 2, 1, kEvalJobPending), running, false, "", 5).state,
            kEvalJobRunning);
}

TEST(EvalJobState, AJobThatEndedWithoutAResultFailedWithItsReason) {
  JobInfo job;
  job.state = "FAILED";
  job.exit_code = "65:0";
  const EvalJobRecord next = NextEvalJobState(Row(1, 2, 1, kEvalJobRunning), job, false,
                                              "baton-train: weights do not verify", 5);
  EXPECT_EQ(next.state, kEvalJobFailed);
  EXPECT_NE(next.reason.find("FAILED"), std::string::npos) << next.reason;
  EXPECT_NE(next.reason.find("65:0"), std::string::npos) << next.reason;
  EXPECT_NE(next.reason.find("weights do not verify"), std::string::npos) << next.reason;
  JobInfo completed;
  completed.state = "COMPLETED";
  EXPECT_EQ(NextEvalJobState(Row(1, 2, 1, kEvalJobRunning), completed, false, "", 5).state,
            kEvalJobFailed);
  const EvalJobRecord gone =
      NextEvalJobState(Row(1, 2, 1, kEvalJobRunning), std::nullopt, false, "", 5);
  EXPECT_EQ(gone.state, kEvalJobFailed);
  EXPECT_NE(gone.reason.find("no longer knows"), std::string::npos);
}

TEST(EvalJobState, AnEndedRowIsLeftAsItIs) {
  JobInfo job;
  job.state = "RUNNING";
  const EvalJobRecord row = Row(1, 2, 1, kEvalJobFailed);
  EXPECT_EQ(NextEvalJobState(row, job, true, "", 5).state, kEvalJobFailed);
}

}  // namespace
}  // namespace baton
