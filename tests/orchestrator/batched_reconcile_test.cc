// A sync pass asks SLURM about every job it watches in one batched query, however many runs it
// is given (plain runs and array tasks alike), and the answer reconciles each run as asking
// about it alone would.
#include <gtest/gtest.h>

#include "orchestrator/reconcile/reconciler.h"
#include "orchestrator/reconcile/sync_pass.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "schema/run_folder.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::EndLine;
using test::MakeRunWithJob;
using test::OpenStore;
using test::StepLine;
using test::TempDir;
using test::WriteFirstAttempt;

class BatchedReconcileTest : public ::testing::Test {
 protected:
  // `n` runs, each with its own job (or, with `array`, each a task of one array).
  void MakeRuns(int n, bool array) {
    store_ = OpenStore(tmp_ / "baton.db");
    const std::string array_id =
        array ? slurm_.SubmitArray("/x/sbatch.sh", "0-" + std::to_string(n - 1) + "%4").value()
              : "";
    for (int i = 0; i < n; ++i) {
      const std::string name = "r" + std::to_string(i);
      const std::string job =
          array ? array_id + "_" + std::to_string(i) : slurm_.Submit("/x/sbatch.sh").value();
      runs_.push_back(MakeRunWithJob(*store_, tmp_ / name, name, /*target=*/4, job));
    }
  }
  void Events(size_t i, int last, const std::string& tail = "") {
    WriteFirstAttempt(runs_[i], last, tail);
  }

  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  std::vector<RunRecord> runs_;
};

TEST_F(BatchedReconcileTest, OnePassAsksSlurmOnceForAllItsRuns) {
  MakeRuns(32, /*array=*/false);
  for (size_t i = 0; i < runs_.size(); ++i) {
    Events(i, 2);
    slurm_.SetState(runs_[i].job_id, i % 2 == 0 ? "RUNNING" : "CANCELLED");
  }
  const int before = slurm_.job_queries;
  Result<SyncReport> pass = SyncRuns(*store_, runs_, SyncOptions{&slurm_}, 100);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_TRUE(pass->reconcile.ok()) << pass->reconcile.ToString();
  EXPECT_EQ(slurm_.job_queries - before, 1);
  for (size_t i = 0; i < runs_.size(); ++i) {
    EXPECT_EQ(pass->runs[i].status, i % 2 == 0 ? RunStatus::kRunning : RunStatus::kCancelled)
        << "run " << i;
  }
}

// watch's pass also follows up runs that ended; they ride in the same query.
TEST_F(BatchedReconcileTest, FollowedUpRunsShareTheQuery) {
  MakeRuns(3, /*array=*/false);
  for (size_t i = 0; i < runs_.size(); ++i) {
    Events(i, 2);
    slurm_.SetState(runs_[i].job_id, "RUNNING");
  }
  ASSERT_TRUE(SyncRuns(*store_, runs_, SyncOptions{&slurm_}, 50).ok());
  Append(RunFolder{runs_[0].run_dir}.EventsFile(runs_[0].job_id, 0),
         StepLine(3) + StepLine(4) + EndLine("done", "completed", 0));
  ASSERT_TRUE(SyncRuns(*store_, runs_, SyncOptions{&slurm_}, 60).ok());
  slurm_.SetState(runs_[0].job_id, "COMPLETED");
  const std::vector<RunRecord> active = store_->ListActiveRuns().value();
  ASSERT_EQ(active.size(), 2u);
  SyncOptions watch{&slurm_};
  watch.follow_up_ended_runs = true;
  const int before = slurm_.job_queries;
  Result<SyncReport> pass = SyncRuns(*store_, active, watch, 80);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(slurm_.job_queries - before, 1);
  EXPECT_EQ(store_->ListAttempts(runs_[0].id).value().back().slurm_state, "COMPLETED");
}

// Array tasks are asked and answered as "<array>_<task>"; a task SLURM forgot is gone.
TEST_F(BatchedReconcileTest, ArrayTasksAreReconciledOneByOne) {
  MakeRuns(4, /*array=*/true);
  ASSERT_EQ(slurm_.arrays, std::vector<std::string>{"0-3%4"});
  Events(0, 4);
  Events(1, 2);
  Events(2, 2);
  slurm_.SetState(runs_[0].job_id, "COMPLETED");
  slurm_.SetState(runs_[1].job_id, "RUNNING");
  slurm_.Forget(runs_[2].job_id);
  const int before = slurm_.job_queries;
  Result<SyncReport> pass = SyncRuns(*store_, runs_, SyncOptions{&slurm_}, 100);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(slurm_.job_queries - before, 1);
  EXPECT_EQ(pass->runs[0].status, RunStatus::kCompleted);
  EXPECT_EQ(pass->runs[1].status, RunStatus::kRunning);
  EXPECT_EQ(pass->runs[2].status, RunStatus::kFailed);
  EXPECT_NE(pass->runs[2].reason.find("is gone"), std::string::npos) << pass->runs[2].reason;
  EXPECT_EQ(pass->runs[3].status, RunStatus::kPending);
}

TEST_F(BatchedReconcileTest, SlurmDownStopsThePassAfterOneTry) {
  MakeRuns(5, /*array=*/false);
  slurm_.down = true;
  Result<SyncReport> pass = SyncRuns(*store_, runs_, SyncOptions{&slurm_}, 100);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(pass->reconcile.code(), Code::kUnavailable);
  EXPECT_NE(pass->reconcile.message().find("scontrol -o show job"), std::string::npos);
}

// What the real client parses from one `scontrol -o show job`: a running task, a finished
// task, and the array's remaining tasks pending as one record.
TEST(ScontrolIndex, KeysArrayTasksAndTheirPendingRecord) {
  const std::string out =
      "JobId=41 ArrayJobId=40 ArrayTaskId=0 JobName=s JobState=RUNNING Restarts=2 Reason=None\n"
      "JobId=42 ArrayJobId=40 ArrayTaskId=1 JobName=s JobState=COMPLETED Reason=None\n"
      "JobId=40 ArrayJobId=40 ArrayTaskId=2-4,7%2 JobName=s JobState=PENDING Reason=JobArray\n"
      "JobId=50 JobName=plain JobState=PENDING Reason=BeginTime Restarts=1\n";
  const std::map<std::string, JobInfo> jobs = IndexScontrolJobs(out);
  ASSERT_EQ(jobs.count("40_0"), 1u);
  EXPECT_EQ(jobs.at("40_0").job_id, "40_0");
  EXPECT_EQ(jobs.at("40_0").state, "RUNNING");
  EXPECT_EQ(jobs.at("40_0").restarts, 2);
  EXPECT_EQ(jobs.at("41").job_id, "40_0");  // also by its own JobId
  EXPECT_EQ(jobs.at("40_1").state, "COMPLETED");
  for (const char* t : {"40_2", "40_3", "40_4", "40_7"}) {
    ASSERT_EQ(jobs.count(t), 1u) << t;
    EXPECT_EQ(jobs.at(t).job_id, t);
    EXPECT_EQ(jobs.at(t).state, "PENDING");
  }
  EXPECT_EQ(jobs.count("40_5"), 0u);
  EXPECT_EQ(jobs.at("50").job_id, "50");
  EXPECT_EQ(jobs.at("50").reason, "BeginTime");
  EXPECT_TRUE(IndexScontrolJobs("No jobs in the system\n").empty());
}

TEST(ScontrolIndex, ArrayTaskIdsReadsListsAndRanges) {
  EXPECT_EQ(ArrayTaskIds("3-5%4"), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(ArrayTaskIds("1,4-5"), (std::vector<int64_t>{1, 4, 5}));
  EXPECT_EQ(ArrayTaskIds("7"), (std::vector<int64_t>{7}));
  EXPECT_TRUE(ArrayTaskIds("").empty());
  EXPECT_TRUE(ArrayTaskIds("a-b").empty());
  EXPECT_TRUE(ArrayTaskIds("1,").empty());
  EXPECT_EQ(ArrayTaskIds("0-999", 10).size(), 10u);
}

}  // namespace
}  // namespace baton
