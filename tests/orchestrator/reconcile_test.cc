// Reconcile with the fake SLURM: job states into attempt end reasons and run status.
#include "orchestrator/reconcile/reconciler.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "orchestrator/ingest/event_ingester.h"
#include "orchestrator/reconcile/hold_release.h"
#include "orchestrator/reconcile/slurm_state_kind.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "schema/atomic_file.h"
#include "schema/checkpoint_manifest.h"
#include "schema/run_folder.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::EndLine;
using test::MakeRunWithJob;
using test::OpenStore;
using test::StartLine;
using test::StepLine;
using test::TempDir;

class ReconcileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenStore(tmp_ / "baton.db");
    job_ = slurm_.Submit("/x/sbatch.sh").value();
    run_ = MakeRunWithJob(*store_, tmp_ / "run", "r", /*target=*/10, job_);
  }
  // Attempt `restart` of the job went from step0 to `last` finished steps (step indices
  // step0..last-1), then wrote `tail` (more records, e.g. a segment_end).
  void Attempt(int restart, int step0, int last, const std::string& tail = "") {
    std::string text = StartLine(step0 ? "exact" : "fresh", step0);
    for (int s = step0; s < last; ++s) text += StepLine(s);
    Append(RunFolder{tmp_ / "run"}.EventsFile(job_, restart), text + tail);
    ASSERT_TRUE(IngestRun(*store_, run_).ok());
  }
  RunRecord Reconcile() {
    std::vector<std::string> changes;
    Status st = ReconcileRun(*store_, slurm_, store_->GetRun(run_.id).value(), 100, &changes);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return store_->GetRun(run_.id).value();
  }
  AttemptRecord LastAttempt() { return store_->ListAttempts(run_.id).value().back(); }

  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  RunRecord run_;
  std::string job_;
};

TEST_F(ReconcileTest, PendingBeforeAnyAttemptStaysPending) {
  EXPECT_EQ(Reconcile().status, RunStatus::kPending);
}

TEST_F(ReconcileTest, RunningJobMeansRunningRun) {
  slurm_.SetState(job_, "RUNNING");
  Attempt(0, 0, 3);
  EXPECT_EQ(Reconcile().status, RunStatus::kRunning);
  EXPECT_EQ(LastAttempt().slurm_state, "RUNNING");
}

TEST_F(ReconcileTest, ARequeueBySlurmIsNotAFailure) {
  Attempt(0, 0, 3);  // killed at the grace time: no attempt_end
  slurm_.SetState(job_, "PENDING", "BeginTime");
  slurm_.job(job_)->restarts = 1;
  RunRecord r = Reconcile();
  EXPECT_EQ(r.status, RunStatus::kRequeued);
  EXPECT_EQ(LastAttempt().end_reason, "preempted");
}

TEST_F(ReconcileTest, PreemptedStateClosesTheAttempt) {
  Attempt(0, 0, 3);
  slurm_.SetState(job_, "PREEMPTED");
  EXPECT_EQ(Reconcile().status, RunStatus::kRequeued);
  EXPECT_EQ(LastAttempt().end_reason, "preempted");
}

TEST_F(ReconcileTest, CompletedAtTheTargetIsCompleted) {
  Attempt(0, 0, 10);
  slurm_.SetState(job_, "COMPLETED");
  EXPECT_EQ(Reconcile().status, RunStatus::kCompleted);
  EXPECT_EQ(LastAttempt().end_reason, "completed");
}

TEST_F(ReconcileTest, CompletedShortOfTheTargetIsFailed) {
  Attempt(0, 0, 4);
  slurm_.SetState(job_, "COMPLETED");
  RunRecord r = Reconcile();
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_NE(r.reason.find("step 4 of 10"), std::string::npos) << r.reason;
}

TEST_F(ReconcileTest, TimeoutNodeFailCancelAndFailure) {
  Attempt(0, 0, 4);
  slurm_.SetState(job_, "NODE_FAIL");
  EXPECT_EQ(Reconcile().status, RunStatus::kRequeued);
  EXPECT_EQ(LastAttempt().end_reason, "node_failure");

  Attempt(1, 4, 6);
  slurm_.job(job_)->restarts = 1;
  slurm_.SetState(job_, "TIMEOUT");
  slurm_.job(job_)->restarts = 1;
  RunRecord r = Reconcile();
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_EQ(LastAttempt().end_reason, "timeout");
}

TEST_F(ReconcileTest, CancelledInSlurm) {
  Attempt(0, 0, 2);
  slurm_.SetState(job_, "CANCELLED");
  EXPECT_EQ(Reconcile().status, RunStatus::kCancelled);
  EXPECT_EQ(LastAttempt().end_reason, "cancelled");
}

TEST_F(ReconcileTest, FailedJobIsACrash) {
  Attempt(0, 0, 2);
  slurm_.SetState(job_, "FAILED");
  slurm_.job(job_)->exit_code = "1:0";
  RunRecord r = Reconcile();
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_EQ(LastAttempt().end_reason, "crashed");
}

// A sweep member whose run folder was deleted: its task's launcher refuses (66) before any
// attempt, and the run is FAILED saying the folder is gone; another run is not touched.
TEST_F(ReconcileTest, AJobWhoseRunFolderIsGoneFailsSayingSo) {
  const std::string other_job = slurm_.Submit("/x/sbatch.sh").value();
  const RunRecord other = MakeRunWithJob(*store_, tmp_ / "other", "o", /*target=*/10, other_job);
  slurm_.SetState(other_job, "RUNNING");
  std::filesystem::remove_all(tmp_ / "run");
  slurm_.SetState(job_, "FAILED");
  slurm_.job(job_)->exit_code = "66:0";
  RunRecord r = Reconcile();
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_EQ(
      r.reason.rfind(
          "run folder " + (tmp_ / "run") + " is gone: job " + job_ + " FAILED (exit code 66:0)", 0),
      0u)
      << r.reason;
  std::vector<std::string> changes;
  ASSERT_TRUE(ReconcileRun(*store_, slurm_, store_->GetRun(other.id).value(), 100, &changes).ok());
  EXPECT_EQ(store_->GetRun(other.id).value().status, RunStatus::kRunning);
}

// When SLURM rather than the launcher ends the story, the trainer's own words still end the reason.
TEST_F(ReconcileTest, AFailedRunsReasonCarriesTheTrainersMessage) {
  Attempt(
      0, 0, 2,
      "{\"type\":\"segment_end\",\"time\":2,\"source\":\"trainer\",\"step\":2,\"reason\":\"error\","
      "\"exit_code\":70,\"rank\":1,\"message\":\"internal error in libtorch: out of memory\"}\n");
  slurm_.SetState(job_, "FAILED");
  slurm_.job(job_)->exit_code = "70:0";
  RunRecord r = Reconcile();
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_NE(
      r.reason.find("FAILED (exit code 70:0) at step 2: internal error in libtorch: out of memory"),
      std::string::npos)
      << r.reason;
}

TEST_F(ReconcileTest, AJobGoneFromSlurm) {
  Attempt(0, 0, 10);
  slurm_.Forget(job_);
  EXPECT_EQ(Reconcile().status, RunStatus::kCompleted);
}

TEST_F(ReconcileTest, SlurmDownChangesNothing) {
  Attempt(0, 0, 2);
  slurm_.down = true;
  Status st = ReconcileRun(*store_, slurm_, store_->GetRun(run_.id).value(), 100);
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(store_->GetRun(run_.id).value().status, RunStatus::kRunning);  // from ingest
}

TEST_F(ReconcileTest, TerminalRunsAreLeftAlone) {
  ASSERT_TRUE(store_
                  ->Write([&] {
                    return store_->SetRunStatusInTx(run_.id, RunStatus::kCancelled, "user", 2);
                  })
                  .ok());
  slurm_.SetState(job_, "RUNNING");
  EXPECT_EQ(Reconcile().status, RunStatus::kCancelled);
}

// The launcher's attempt_end (ingest ends the run) comes before SLURM's end of the job: the
// last attempt keeps the RUNNING seen while it ran, labelled as such, until SLURM reports the
// start's final state; then that is recorded and the run stays as ingest left it.
class FinishedRunTest : public ReconcileTest {
 protected:
  void RunToTheEnd() {
    slurm_.SetState(job_, "RUNNING");
    Attempt(0, 0, 5);
    ASSERT_EQ(Reconcile().status, RunStatus::kRunning);
    std::string tail;
    for (int s = 5; s < 10; ++s) tail += StepLine(s);
    Append(RunFolder{tmp_ / "run"}.EventsFile(job_, 0), tail + EndLine("done", "completed", 0));
    ASSERT_TRUE(IngestRun(*store_, run_).ok());
    ASSERT_EQ(store_->GetRun(run_.id).value().status, RunStatus::kCompleted);
    ASSERT_EQ(LastAttempt().slurm_state, "RUNNING");
    ASSERT_EQ(ClassifySlurmState(LastAttempt()), SlurmStateKind::kLastSeen);
  }
};

TEST_F(FinishedRunTest, LearnsSlurmsFinalStateOfItsLastStart) {
  RunToTheEnd();
  slurm_.SetState(job_, "COMPLETING");
  EXPECT_EQ(Reconcile().status, RunStatus::kCompleted);
  EXPECT_EQ(LastAttempt().slurm_state, "RUNNING");  // not over yet in SLURM
  slurm_.SetState(job_, "COMPLETED", "None");
  slurm_.job(job_)->exit_code = "0:0";
  std::vector<std::string> changes;
  ASSERT_TRUE(ReconcileRun(*store_, slurm_, store_->GetRun(run_.id).value(), 100, &changes).ok());
  const AttemptRecord a = LastAttempt();
  EXPECT_EQ(a.slurm_state, "COMPLETED");
  EXPECT_EQ(a.slurm_exit_code, "0:0");
  EXPECT_EQ(ClassifySlurmState(a), SlurmStateKind::kFinal);
  EXPECT_EQ(a.end_reason, "completed");
  EXPECT_EQ(store_->GetRun(run_.id).value().status, RunStatus::kCompleted);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(changes[0].find("SLURM's final state COMPLETED (last seen RUNNING)"), std::string::npos)
      << changes[0];
}

TEST_F(FinishedRunTest, KeepsTheStateLastSeenWhenSlurmForgotTheJobOrStartedItAgain) {
  RunToTheEnd();
  slurm_.Forget(job_);
  Reconcile();
  EXPECT_EQ(ClassifySlurmState(LastAttempt()), SlurmStateKind::kLastSeen);
  slurm_.SetState(job_, "COMPLETED");
  slurm_.job(job_)->restarts = 1;  // another start's end, not this attempt's
  Reconcile();
  EXPECT_EQ(LastAttempt().slurm_state, "RUNNING");
}

TEST_F(FinishedRunTest, AsksSlurmOnlyForAWhileAfterTheRunEnded) {
  RunToTheEnd();
  slurm_.down = true;  // any question to SLURM now fails
  const double ended = LastAttempt().ended_at.value();
  EXPECT_EQ(ReconcileRun(*store_, slurm_, store_->GetRun(run_.id).value(), ended + 100).code(),
            Code::kUnavailable);
  EXPECT_TRUE(ReconcileRun(*store_, slurm_, store_->GetRun(run_.id).value(),
                           ended + kSlurmFinalStateFollowUpS + 1)
                  .ok());
}

// The requeue hold after a clean preemption, released by the watch/serve pass (hold_release.h).
class HoldReleaseTest : public ReconcileTest {
 protected:
  void SetUp() override {
    ReconcileTest::SetUp();
    Config("");
  }
  // The run's frozen config, with `slurm` extra keys ("" = the defaults).
  void Config(const std::string& slurm) {
    const std::string yaml = "run: {steps: 10}\ndata: {path: /data}\n" +
                             (slurm.empty() ? "" : "slurm: {" + slurm + "}\n");
    ASSERT_TRUE(
        store_->Write([&] { return store_->SetRunDirInTx(run_.id, run_.run_dir, yaml); }).ok());
    run_ = store_->GetRun(run_.id).value();
  }
  // Attempt 0 ran steps 0..4, checkpointed at 5 on the signal (its manifest on disk unless
  // `committed` is false), exited 75 and the launcher requeued it (`reason`) at time 2; SLURM now
  // holds the job (PENDING, BeginTime, Restarts 1).
  void Preempted(const std::string& reason = "preempted", bool committed = true) {
    const std::string ckpt = tmp_ / "run/checkpoints/checkpoint_step_5";
    std::filesystem::create_directories(ckpt);
    if (committed) Commit(ckpt, 5);
    Attempt(0, 0, 5,
            "{\"type\":\"checkpoint\",\"time\":1.5,\"source\":\"trainer\",\"step\":5,\"path\":\"" +
                ckpt +
                "\",\"bytes\":64,\"seconds\":0.1,\"reason\":\"signal\"}\n"
                "{\"type\":\"segment_end\",\"time\":1.8,\"source\":\"trainer\",\"step\":5,"
                "\"reason\":\"signal\",\"signal\":\"USR1\",\"exit_code\":75}\n" +
                EndLine("requeue", reason, 75));
    slurm_.SetState(job_, "PENDING", "BeginTime");
    slurm_.job(job_)->restarts = 1;
  }
  // A full checkpoint of `step` in `dir` that verifies (small stand-in files, their manifest).
  static void Commit(const std::string& dir, int64_t step) {
    for (const char* f : {kWeightsFile, kModelConfigFile, kOptimizerFile})
      Append(dir + "/" + f, std::string("bytes of ") + f);
    Append(dir + "/" + kStateFile, "{\"step\": " + std::to_string(step) + "}");
    CheckpointManifest m;
    m.step = step;
    ASSERT_TRUE(WriteManifest(dir, m, RequiredFiles("full")).ok());
    ASSERT_TRUE(VerifyCheckpoint(dir).ok());
  }
  // One watch/serve pass at `now`; its change lines.
  std::vector<std::string> Pass(double now, Code expect = Code::kOk) {
    std::vector<std::string> changes;
    ReconcileOptions watch;
    watch.release_requeue_holds = true;
    Status st =
        ReconcileRun(*store_, slurm_, store_->GetRun(run_.id).value(), now, &changes, watch);
    EXPECT_EQ(st.code(), expect) << st.ToString();
    return changes;
  }
  static bool Mentions(const std::vector<std::string>& lines, const std::string& text) {
    for (const std::string& l : lines) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  }
};

TEST_F(HoldReleaseTest, ReleasedOnceTheAttemptEndedCleanlyAndTheWaitIsOver) {
  Preempted();
  EXPECT_FALSE(Mentions(Pass(4.0), "released"));  // 2 s after the end: too soon
  EXPECT_TRUE(slurm_.released.empty());
  const std::vector<std::string> changes = Pass(5.5);
  ASSERT_EQ(slurm_.released, std::vector<std::string>{job_});
  EXPECT_TRUE(Mentions(changes, "run " + std::to_string(run_.id) + ": job " + job_ +
                                    ": requeue hold released (scontrol update JobId=" + job_ +
                                    " StartTime=now), 3.5 s after attempt " + job_ +
                                    ".0 ended cleanly at step 5"));
  EXPECT_EQ(store_->ListAttempts(run_.id).value()[0].hold_released_at, 5.5);
  EXPECT_EQ(store_->GetRun(run_.id).value().status, RunStatus::kRequeued);
  slurm_.SetState(job_, "PENDING", "BeginTime");  // SLURM has not scheduled it yet
  EXPECT_FALSE(Mentions(Pass(7.0), "released"));
  EXPECT_EQ(slurm_.released.size(), 1u);  // once per requeue
}

TEST_F(HoldReleaseTest, TheQueryCommandsOnlyLook) {
  Preempted();
  Reconcile();  // no ReconcileOptions: `baton show`, `ls`, ...
  EXPECT_TRUE(slurm_.released.empty());
}

TEST_F(HoldReleaseTest, NotAfterAnEndThatWasNotClean) {
  Preempted("crashed");
  Pass(10);
  EXPECT_TRUE(slurm_.released.empty());
}

TEST_F(HoldReleaseTest, NotWithoutTheCheckpointCommitted) {
  Preempted("preempted", /*committed=*/false);
  Pass(10);
  EXPECT_TRUE(slurm_.released.empty());
}

// A damaged checkpoint would send the next attempt back to an older one: the hold stands, for a
// manifest that does not parse and for a file whose bytes no longer hash to the manifest's.
TEST_F(HoldReleaseTest, NotWhenTheCheckpointDoesNotVerify) {
  Preempted();
  const std::string ckpt = tmp_ / "run/checkpoints/checkpoint_step_5";
  const std::string manifest = ReadFile(ckpt + "/" + kManifestName).value();
  ASSERT_TRUE(WriteTextAtomic(ckpt + "/" + kManifestName, "{}").ok());
  Pass(10);
  EXPECT_TRUE(slurm_.released.empty());
  ASSERT_TRUE(WriteTextAtomic(ckpt + "/" + kManifestName, manifest).ok());
  std::string weights = ReadFile(ckpt + "/" + kWeightsFile).value();
  weights[0] ^= 1;  // same size, other bytes
  ASSERT_TRUE(WriteTextAtomic(ckpt + "/" + kWeightsFile, weights).ok());
  Pass(11);
  EXPECT_TRUE(slurm_.released.empty());
  weights[0] ^= 1;
  ASSERT_TRUE(WriteTextAtomic(ckpt + "/" + kWeightsFile, weights).ok());
  Pass(12);
  EXPECT_EQ(slurm_.released, std::vector<std::string>{job_});
}

TEST_F(HoldReleaseTest, TheConfigTurnsItOffOrWaitsLonger) {
  Config("release_requeue_hold: false");
  Preempted();
  Pass(100);
  EXPECT_TRUE(slurm_.released.empty());
  Config("release_hold_after_s: 30");
  Pass(20);
  EXPECT_TRUE(slurm_.released.empty());
  Pass(40);
  EXPECT_EQ(slurm_.released.size(), 1u);
}

TEST_F(HoldReleaseTest, ARefusalIsReportedOnceAndTheRunWaitsOutTheHold) {
  Preempted();
  slurm_.refuse_release = "Access/permission denied";
  const std::vector<std::string> first = Pass(10);
  EXPECT_TRUE(Mentions(first, "SLURM refused to release the requeue hold ("));
  EXPECT_TRUE(Mentions(first, "Access/permission denied); the run waits out the hold"));
  const AttemptRecord a = store_->ListAttempts(run_.id).value()[0];
  EXPECT_FALSE(a.hold_released_at);
  EXPECT_NE(a.hold_release_error.find("Access/permission denied"), std::string::npos);
  slurm_.refuse_release.clear();  // would succeed now, but is not asked again for this run
  EXPECT_FALSE(Mentions(Pass(20), "hold"));
  EXPECT_TRUE(slurm_.released.empty());
}

}  // namespace
}  // namespace baton
