// The sync pass with the fake SLURM: ingest then reconcile, for the runs given, and what it
// reports when SLURM or a run's events fail.
#include "orchestrator/reconcile/sync_pass.h"

#include <gtest/gtest.h>

#include "orchestrator/reconcile/slurm_state_kind.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "schema/run_folder.h"
#include "test_util.h"
#include "tests/unit/vocabulary_checks.h"

namespace baton {
namespace {

using test::Append;
using test::EndLine;
using test::MakeRunWithJob;
using test::OpenStore;
using test::StepLine;
using test::TempDir;
using test::WriteFirstAttempt;

class SyncPassTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenStore(tmp_ / "baton.db");
    for (const char* name : {"a", "b"}) {
      const std::string job = slurm_.Submit("/x/sbatch.sh").value();
      runs_.push_back(MakeRunWithJob(*store_, tmp_ / name, name, /*target=*/4, job));
    }
  }
  // Run `i` wrote attempt 0 of its job with steps 1..last (not ingested yet).
  void Events(size_t i, int last, const std::string& tail = "") {
    WriteFirstAttempt(runs_[i], last, tail);
  }

  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  std::vector<RunRecord> runs_;
};

// watch and serve are given the active runs only: a run whose attempt_end came while SLURM
// still said RUNNING is followed up in later passes for SLURM's final state of that start.
TEST_F(SyncPassTest, WatchAndServeFollowUpARunThatEndedForSlurmsFinalState) {
  Events(0, 2);
  slurm_.SetState(runs_[0].job_id, "RUNNING");
  slurm_.SetState(runs_[1].job_id, "RUNNING");
  ASSERT_TRUE(SyncRuns(*store_, runs_, SyncOptions{&slurm_}, 50).ok());
  Append(RunFolder{runs_[0].run_dir}.EventsFile(runs_[0].job_id, 0),
         StepLine(3) + StepLine(4) + EndLine("done", "completed", 0));
  Result<SyncReport> ended = SyncRuns(*store_, runs_, SyncOptions{&slurm_}, 60);
  ASSERT_TRUE(ended.ok()) << ended.status().ToString();
  ASSERT_EQ(ended->runs[0].status, RunStatus::kCompleted);
  auto last = [&] { return store_->ListAttempts(runs_[0].id).value().back(); };
  ASSERT_EQ(ClassifySlurmState(last()), SlurmStateKind::kLastSeen);

  slurm_.SetState(runs_[0].job_id, "COMPLETED");
  const std::vector<RunRecord> active = store_->ListActiveRuns().value();
  ASSERT_EQ(active.size(), 1u);
  // A query command's pass over other runs leaves it alone ...
  ASSERT_TRUE(SyncRuns(*store_, active, SyncOptions{&slurm_}, 70).ok());
  EXPECT_EQ(last().slurm_state, "RUNNING");
  // ... the watch/serve pass follows it up.
  SyncOptions watch{&slurm_};
  watch.follow_up_ended_runs = true;
  Result<SyncReport> pass = SyncRuns(*store_, active, watch, 80);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_TRUE(pass->reconcile.ok()) << pass->reconcile.ToString();
  EXPECT_EQ(last().slurm_state, "COMPLETED");
  EXPECT_EQ(ClassifySlurmState(last()), SlurmStateKind::kFinal);
  EXPECT_EQ(pass->runs.size(), 1u);  // the runs it was given, as before
  ASSERT_EQ(pass->changes.size(), 1u);
  EXPECT_NE(pass->changes[0].find("SLURM's final state COMPLETED"), std::string::npos);
}

TEST_F(SyncPassTest, IngestsThenReconcilesAndReturnsTheRunsAsTheyAreNow) {
  Events(0, 4);  // reached its target; the launcher was killed before attempt_end
  Events(1, 2, "not a record\n");
  slurm_.SetState(runs_[0].job_id, "COMPLETED");
  slurm_.SetState(runs_[1].job_id, "RUNNING");
  Result<SyncReport> pass = SyncRuns(*store_, runs_, SyncOptions{&slurm_}, 100);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_TRUE(pass->reconcile.ok()) << pass->reconcile.ToString();
  EXPECT_EQ(pass->ingested.steps, 6);
  EXPECT_EQ(pass->ingested.bad_lines, 1);
  ASSERT_EQ(pass->ingested.warnings.size(), 1u);
  ASSERT_EQ(pass->runs.size(), 2u);
  EXPECT_EQ(pass->runs[0].status, RunStatus::kCompleted);
  EXPECT_EQ(pass->runs[1].status, RunStatus::kRunning);
  EXPECT_FALSE(pass->changes.empty());
  EXPECT_EQ(store_->GetRun(runs_[0].id).value().status, RunStatus::kCompleted);
}

TEST_F(SyncPassTest, WithoutSlurmItOnlyIngests) {
  Events(0, 2, EndLine("done", "completed", 0));
  slurm_.SetState(runs_[1].job_id, "CANCELLED");  // not asked
  Result<SyncReport> pass = SyncRuns(*store_, runs_, SyncOptions{}, 100);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(pass->runs[0].status, RunStatus::kCompleted);  // from attempt_end
  EXPECT_EQ(pass->runs[1].status, RunStatus::kPending);
  EXPECT_TRUE(pass->changes.empty());
}

TEST_F(SyncPassTest, SlurmDownIsReportedAndIngestStillCounts) {
  Events(0, 2);
  Events(1, 3);
  slurm_.down = true;
  Result<SyncReport> pass = SyncRuns(*store_, runs_, SyncOptions{&slurm_}, 100);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(pass->reconcile.code(), Code::kUnavailable);
  EXPECT_EQ(pass->ingested.steps, 5);
  EXPECT_EQ(pass->runs[0].status, RunStatus::kRunning);
  EXPECT_EQ(pass->runs[1].status, RunStatus::kRunning);
}

TEST_F(SyncPassTest, ARunThatCannotBeIngestedEndsThePassNamingIt) {
  // Its rows could not be stored: no such run in the database (foreign keys refuse them).
  RunRecord ghost = runs_[1];
  ghost.id = 999;
  Events(1, 2);
  Result<SyncReport> pass = SyncRuns(*store_, {runs_[0], ghost}, SyncOptions{&slurm_}, 100);
  ASSERT_FALSE(pass.ok());
  EXPECT_NE(pass.status().message().find("ingesting run 999"), std::string::npos)
      << pass.status().ToString();
}

TEST(SlurmStateKind, HasOneWordPerKindAndNoneForNoState) {
  test::ExpectEveryWordParsesBack<SlurmStateKind>("slurm_state_kind");
  EXPECT_EQ(std::size(Vocabulary<SlurmStateKind>::kWords), size_t(SlurmStateKind::kLastSeen) + 1);
  AttemptRecord a;
  EXPECT_EQ(ClassifySlurmState(a), std::nullopt);
  a.slurm_state = "RUNNING";
  EXPECT_EQ(ClassifySlurmState(a), SlurmStateKind::kCurrent);
  a.end_reason = "preempted";
  EXPECT_EQ(ClassifySlurmState(a), SlurmStateKind::kLastSeen);
  a.slurm_state = "PREEMPTED";
  EXPECT_EQ(ClassifySlurmState(a), SlurmStateKind::kFinal);
}

}  // namespace
}  // namespace baton
