// The eval-job pass (eval_job_pass.h) over a real store and real checkpoint folders, with the
// fake SLURM: one job per committed, verified eval target; never a second one for a checkpoint,
// across passes, restarts and two watchers at once; a failure recorded with its reason, retried
// once, then reported; a checkpoint that does not verify recorded with its file, never evaluated.
#include "orchestrator/reconcile/eval_job_pass.h"

#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <thread>

#include "orchestrator/alerts/eval_job_alert.h"
#include "orchestrator/slurm/eval_job_script.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/store/store_alerts.h"
#include "schema/checkpoint_manifest.h"
#include "schema/eval_results.h"
#include "schema/run_folder.h"
#include "test_util.h"

namespace baton {
namespace {

using test::MakeRun;
using test::OpenStore;
using test::TempDir;

class EvalJobPassTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(tmp_ / "data");
    store_ = OpenStore(tmp_ / "baton.db");
    run_ = MakeEvalRun("r", "");
    options_.trainer_bin = "/opt/baton/bin/baton-train";
    options_.on_failure = [this](Store&, const RunRecord&, const EvalJobRecord& job) {
      reported_.push_back(job);
      return Status::Ok();
    };
  }

  // A run of 10 steps saving every 2, evaluated in eval jobs (`extra` joins the eval: section).
  RunRecord MakeEvalRun(const std::string& name, const std::string& extra) {
    const std::string dir = tmp_ / name;
    const std::string yaml = "run: {steps: 10, name: " + name +
                             "}\ndata: {path: " + (tmp_ / "data") +
                             "}\ncheckpoint: {every: 2}\n"
                             "eval: {fraction: 0.1, mode: job, time: '00:05:00'" +
                             extra + "}\n";
    std::filesystem::create_directories(dir);
    std::ofstream(RunFolder{dir}.RunYaml()) << yaml;
    RunRecord run = MakeRun(*store_, dir, name);
    EXPECT_TRUE(store_->Write([&] { return store_->SetRunDirInTx(run.id, dir, yaml); }).ok());
    return store_->GetRun(run.id).value();
  }

  // A committed weights-only checkpoint at `step` (its manifest hashes the file).
  void Commit(const RunRecord& run, int64_t step) {
    const std::string dir = RunFolder{run.run_dir}.CheckpointDir(step);
    std::filesystem::create_directories(dir + "/transformer");
    std::ofstream(dir + "/" + kWeightsFile) << "weights of step " << step;
    CheckpointManifest m;
    m.step = step;
    m.kind = "weights_only";
    ASSERT_TRUE(WriteManifest(dir, m, {kWeightsFile}).ok());
  }

  void Evaluated(const RunRecord& run, int64_t step) {
    EvalEvent e;
    e.step = step;
    e.loss = 0.5;
    ASSERT_TRUE(WriteEvalResult(RunFolder{run.run_dir}, e).ok());
  }

  std::vector<std::string> Pass(const std::vector<RunRecord>& runs, double now) {
    std::vector<std::string> changes;
    const Status st = EvalJobPass(*store_, slurm_, runs, options_, now, &changes);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return changes;
  }

  std::vector<EvalJobRecord> Jobs(const RunRecord& run) {
    return ListEvalJobs(*store_, run.id).value();
  }

  const EvalJobRecord* JobOf(const RunRecord& run, int64_t step, int64_t attempt) {
    jobs_ = Jobs(run);
    for (const EvalJobRecord& j : jobs_) {
      if (j.step == step && j.attempt == attempt) return &j;
    }
    return nullptr;
  }

  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  RunRecord run_;
  EvalJobOptions options_;
  std::vector<EvalJobRecord> reported_;
  std::vector<EvalJobRecord> jobs_;
};

TEST_F(EvalJobPassTest, EachCommittedTargetGetsOneJobThatRunsTheEvalOfItsCheckpoint) {
  Commit(run_, 2);
  Commit(run_, 4);
  // A save still being written is not committed.
  std::filesystem::create_directories(run_.run_dir + "/checkpoints/checkpoint_step_6.partial");
  Pass({run_}, 10);
  ASSERT_EQ(slurm_.submitted.size(), 2u);
  ASSERT_EQ(Jobs(run_).size(), 2u);
  std::ifstream in(slurm_.submitted[0]);
  const std::string script((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(script.find("'/opt/baton/bin/baton-train' eval --config '" + run_.run_dir +
                        "/run.yaml' --checkpoint '" + RunFolder{run_.run_dir}.CheckpointDir(2) +
                        "' --json"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("#SBATCH --requeue"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --time=00:05:00"), std::string::npos);
  for (const EvalJobRecord& j : Jobs(run_)) {
    EXPECT_EQ(j.state, kEvalJobPending);
    EXPECT_EQ(j.attempt, 1);
  }
  // Later passes, and a watch restarted on a new connection, submit nothing more.
  Pass({run_}, 20);
  store_ = OpenStore(tmp_ / "baton.db");
  Pass({run_}, 30);
  EXPECT_EQ(slurm_.submitted.size(), 2u);
  // The next save gets its own.
  Commit(run_, 6);
  Pass({run_}, 40);
  EXPECT_EQ(slurm_.submitted.size(), 3u);
}

TEST_F(EvalJobPassTest, AResultEndsTheJobAndNothingIsSubmittedForItAgain) {
  Commit(run_, 2);
  Pass({run_}, 10);
  const std::string job = JobOf(run_, 2, 1)->job_id;
  slurm_.SetState(job, "RUNNING");
  Pass({run_}, 11);
  EXPECT_EQ(JobOf(run_, 2, 1)->state, kEvalJobRunning);
  Evaluated(run_, 2);
  slurm_.SetState(job, "COMPLETED");
  const std::vector<std::string> changes = Pass({run_}, 12);
  EXPECT_EQ(JobOf(run_, 2, 1)->state, kEvalJobDone);
  EXPECT_TRUE(JobOf(run_, 2, 1)->ended_at.has_value());
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(changes[0].find("step 2 evaluated"), std::string::npos) << changes[0];
  slurm_.Forget(job);
  Pass({run_}, 13);
  EXPECT_EQ(slurm_.submitted.size(), 1u);
}

TEST_F(EvalJobPassTest, AFailedJobIsRecordedWithItsReasonRetriedOnceThenReported) {
  Commit(run_, 2);
  Commit(run_, 4);
  Pass({run_}, 10);
  const std::string first = JobOf(run_, 2, 1)->job_id;
  std::filesystem::create_directories(run_.run_dir + "/logs");
  std::ofstream(run_.run_dir + "/logs/eval_step_2." + first + ".out")
      << "baton: eval job " << first << " restart 0\nbaton-train: cannot open the eval set\n"
      << "baton: eval exited 1\n";
  slurm_.SetState(first, "FAILED");
  slurm_.job(first)->exit_code = "1:0";
  Pass({run_}, 20);
  const EvalJobRecord* failed = JobOf(run_, 2, 1);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->state, kEvalJobFailed);
  EXPECT_NE(failed->reason.find("FAILED"), std::string::npos) << failed->reason;
  EXPECT_NE(failed->reason.find("1:0"), std::string::npos) << failed->reason;
  EXPECT_NE(failed->reason.find("cannot open the eval set"), std::string::npos) << failed->reason;
  ASSERT_NE(JobOf(run_, 2, 2), nullptr) << "the retry";
  EXPECT_EQ(slurm_.submitted.size(), 3u);
  EXPECT_TRUE(reported_.empty());

  slurm_.SetState(JobOf(run_, 2, 2)->job_id, "TIMEOUT");
  const std::vector<std::string> changes = Pass({run_}, 30);
  ASSERT_EQ(reported_.size(), 1u);
  EXPECT_EQ(reported_[0].step, 2);
  EXPECT_EQ(reported_[0].attempt, 2);
  EXPECT_NE(reported_[0].reason.find("TIMEOUT"), std::string::npos);
  bool said = false;
  for (const std::string& c : changes) said |= c.find("failed 2 times") != std::string::npos;
  EXPECT_TRUE(said);
  // Never a third job, never a second report; step 4's job was never held back.
  Pass({run_}, 40);
  Pass({run_}, 50);
  EXPECT_EQ(slurm_.submitted.size(), 3u);
  EXPECT_EQ(reported_.size(), 1u);
  EXPECT_EQ(JobOf(run_, 4, 1)->state, kEvalJobPending);
}

TEST_F(EvalJobPassTest, ACheckpointThatDoesNotVerifyIsRecordedWithItsFileAndNeverEvaluated) {
  Commit(run_, 2);
  std::ofstream(RunFolder{run_.run_dir}.CheckpointDir(2) + "/" + kWeightsFile) << "bit rot!";
  const std::vector<std::string> changes = Pass({run_}, 10);
  EXPECT_TRUE(slurm_.submitted.empty());
  const EvalJobRecord* row = JobOf(run_, 2, 0);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->state, kEvalJobUnverified);
  EXPECT_NE(row->reason.find("diffusion_pytorch_model.safetensors"), std::string::npos)
      << row->reason;
  ASSERT_EQ(changes.size(), 1u);
  Pass({run_}, 20);
  EXPECT_TRUE(slurm_.submitted.empty());
  EXPECT_EQ(Jobs(run_).size(), 1u);
}

TEST_F(EvalJobPassTest, ARefusedSubmissionIsAFailedAttempt) {
  Commit(run_, 2);
  slurm_.reject_message = "Invalid partition name specified";
  Pass({run_}, 10);
  Pass({run_}, 20);
  Pass({run_}, 30);
  ASSERT_EQ(Jobs(run_).size(), 2u);
  EXPECT_EQ(Jobs(run_)[0].state, kEvalJobFailed);
  EXPECT_NE(Jobs(run_)[0].reason.find("Invalid partition"), std::string::npos);
  EXPECT_EQ(reported_.size(), 1u);
}

// One cluster that two watchers (threads) ask at once.
class SharedSlurm : public SlurmClient {
 public:
  explicit SharedSlurm(FakeSlurmClient* fake) : fake_(fake) {}
  Result<std::string> Submit(const std::string& script) override {
    std::lock_guard<std::mutex> lock(mu_);
    return fake_->Submit(script);
  }
  Result<std::optional<JobInfo>> GetJob(const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    return fake_->GetJob(id);
  }
  Result<std::map<std::string, JobInfo>> GetJobs(const std::vector<std::string>& ids) override {
    std::lock_guard<std::mutex> lock(mu_);
    return fake_->GetJobs(ids);
  }
  Status Requeue(const std::string& id) override { return Locked(&FakeSlurmClient::Requeue, id); }
  Status Cancel(const std::string& id) override { return Locked(&FakeSlurmClient::Cancel, id); }
  Status ReleaseHold(const std::string& id) override {
    return Locked(&FakeSlurmClient::ReleaseHold, id);
  }
  Result<PreemptGrace> GetPreemptGrace(const std::string& partition) override {
    std::lock_guard<std::mutex> lock(mu_);
    return fake_->GetPreemptGrace(partition);
  }

 private:
  Status Locked(Status (FakeSlurmClient::*call)(const std::string&), const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return (fake_->*call)(id);
  }
  FakeSlurmClient* fake_;
  std::mutex mu_;
};

TEST_F(EvalJobPassTest, TwoWatchersAtOnceSubmitEachCheckpointOnce) {
  for (int64_t step = 2; step <= 10; step += 2) Commit(run_, step);
  std::unique_ptr<Store> other = OpenStore(tmp_ / "baton.db");
  SharedSlurm cluster(&slurm_);
  auto watch = [&](Store* store) {
    for (int pass = 0; pass < 3; ++pass) {
      std::vector<std::string> changes;
      const Status st = EvalJobPass(*store, cluster, {run_}, options_, 10 + pass, &changes);
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
  };
  std::thread a(watch, store_.get());
  std::thread b(watch, other.get());
  a.join();
  b.join();
  EXPECT_EQ(slurm_.submitted.size(), 5u);
  EXPECT_TRUE(slurm_.cancelled.empty());
  ASSERT_EQ(Jobs(run_).size(), 5u);
  for (const EvalJobRecord& j : Jobs(run_)) EXPECT_EQ(j.attempt, 1);
}

TEST_F(EvalJobPassTest, OnlyRunsInJobModeAndOfTheActingUserGetJobs) {
  const RunRecord inline_run = MakeRun(*store_, tmp_ / "plain", "plain");
  ActingUser me;
  me.name = "alice";
  options_.acting_user = &me;
  Commit(run_, 2);
  RunRecord bobs = run_;
  bobs.owner = "bob";
  Pass({inline_run, bobs}, 10);
  EXPECT_TRUE(slurm_.submitted.empty());
  bobs.owner = "alice";
  Pass({inline_run, bobs}, 20);
  EXPECT_EQ(slurm_.submitted.size(), 1u);
}

TEST(EvalJobScript, TheRequestIsTheEvalSectionsWithTheRunsAsFallback) {
  RunConfig c;
  c.slurm.partition = "debug";
  c.slurm.time = "04:00:00";
  c.slurm.cpus_per_task = 8;
  c.eval.time = "";
  EvalJobRequest r = EvalJobRequestOf(c);
  EXPECT_EQ(r.partition, "debug");
  EXPECT_EQ(r.time, "04:00:00");
  EXPECT_EQ(r.cpus_per_task, 8);
  c.eval.partition = "eval";
  c.eval.time = "00:20:00";
  c.eval.cpus_per_task = 2;
  r = EvalJobRequestOf(c);
  EXPECT_EQ(r.partition, "eval");
  EXPECT_EQ(r.time, "00:20:00");
  EXPECT_EQ(r.cpus_per_task, 2);
  c.eval.partition = "eval\n#SBATCH --x";
  EXPECT_EQ(RenderEvalJobScript(c, {1, "r", "/runs/1", 2, 1, "/bin/baton-train"}).status().code(),
            Code::kConfig);
}

TEST(EvalJobScript, SlurmTimesInSeconds) {
  EXPECT_EQ(SlurmTimeSeconds("30"), 1800);
  EXPECT_EQ(SlurmTimeSeconds("05:30"), 330);
  EXPECT_EQ(SlurmTimeSeconds("01:00:05"), 3605);
  EXPECT_EQ(SlurmTimeSeconds("2-01"), 2 * 86400 + 3600);
  EXPECT_EQ(SlurmTimeSeconds("1-00:10:00"), 86400 + 600);
  EXPECT_EQ(SlurmTimeSeconds("UNLIMITED"), -1);
}

// The report's hook of watch and serve: a final eval_failed incident naming the step and reason.
TEST_F(EvalJobPassTest, ARetryThatFailsIsAnEvalFailedIncident) {
  EXPECT_TRUE(IsIncidentKind("eval_failed"));
  const AlertsSection lab;
  options_.on_failure = EvalFailedHook(lab);
  Commit(run_, 2);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    Pass({run_}, 10.0 * attempt);
    slurm_.SetState(JobOf(run_, 2, attempt)->job_id, "NODE_FAIL");
  }
  Pass({run_}, 30);
  Pass({run_}, 40);
  const std::vector<IncidentRecord> incidents = ListIncidents(*store_, run_.id).value();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].kind, "eval_failed");
  EXPECT_EQ(incidents[0].outcome, "final");
  EXPECT_EQ(incidents[0].step, 2);
  EXPECT_NE(incidents[0].excerpt.find("NODE_FAIL"), std::string::npos) << incidents[0].excerpt;
}

}  // namespace
}  // namespace baton
