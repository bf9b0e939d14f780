// baton resume with the fake SLURM: which runs may resume, only slurm: keys may change, the
// waiting job is taken back after the new one is queued, all or nothing.
#include "orchestrator/submit/resumer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "orchestrator/nodes/manual_exclusion.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/submit/submitter.h"
#include "schema/atomic_file.h"
#include "schema/run_config.h"
#include "schema/run_folder.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::OpenStore;
using test::TempDir;

constexpr const char* kConfig =
    "run: {name: two-nodes, steps: 20, seed: 3}\ndata: {path: data}\n"
    "slurm: {partition: debug, nodes: 2, ntasks_per_node: 1, time: '10:00'}\n";

class ResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Append(tmp_ / "data/.keep", "");
    Append(tmp_ / "cfg.yaml", kConfig);
    store_ = OpenStore(tmp_ / "home/baton.db");
    SubmitRequest req;
    req.config_path = tmp_ / "cfg.yaml";
    req.baton_bin = "/opt/bin/baton";
    req.baton_home = tmp_ / "home";
    submitted_ = SubmitRun(store_.get(), slurm_, req, 1).value();
    run_ = std::to_string(submitted_.run_id);
  }
  // An edited copy of the config (in the same folder, so data: resolves the same).
  std::string Edited(const std::string& from, const std::string& to) {
    std::string text = kConfig;
    text.replace(text.find(from), from.size(), to);
    const std::string path = tmp_ / ("edited" + std::to_string(++edits_) + ".yaml");
    Append(path, text);
    return path;
  }
  std::string RunYaml() { return ReadFile(submitted_.run_dir + "/run.yaml").value(); }
  std::string Script() { return ReadFile(submitted_.run_dir + "/sbatch.sh").value(); }

  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  SubmitResult submitted_;
  std::string run_;
  int edits_ = 0;
};

TEST_F(ResumeTest, WaitingRunMovesToOneNodeAndTheWaitingJobIsTakenBack) {
  slurm_.SetState(submitted_.job_id, "PENDING", "BeginTime");
  ResumeRunResult r =
      ResumeRun(*store_, slurm_, {run_, Edited("nodes: 2", "nodes: 1"), "/opt/bin/baton", ""}, 5)
          .value();
  EXPECT_EQ(r.cancelled_job, submitted_.job_id);
  EXPECT_EQ(r.changed, std::vector<std::string>{"slurm.nodes: 2 -> 1"});
  EXPECT_EQ(slurm_.cancelled, std::vector<std::string>{submitted_.job_id});
  ASSERT_EQ(slurm_.submitted.size(), 2u);
  RunRecord run = store_->GetRun(submitted_.run_id).value();
  EXPECT_EQ(run.job_id, r.job_id);
  EXPECT_NE(r.job_id, submitted_.job_id);
  EXPECT_EQ(run.status, RunStatus::kPending);
  EXPECT_NE(run.reason.find("slurm.nodes: 2 -> 1"), std::string::npos) << run.reason;
  EXPECT_NE(Script().find("#SBATCH --nodes=1\n"), std::string::npos);
  EXPECT_EQ(LoadRunConfig(submitted_.run_dir + "/run.yaml").value().slurm.nodes, 1);
  EXPECT_EQ(run.config, RunYaml());
}

TEST_F(ResumeTest, CancelledRunResumesWithItsFrozenConfig) {
  ASSERT_TRUE(store_
                  ->Write([&] {
                    return store_->SetRunStatusInTx(submitted_.run_id, RunStatus::kCancelled,
                                                    "by user", 2);
                  })
                  .ok());
  const std::string before = RunYaml();
  ResumeRunResult r = ResumeRun(*store_, slurm_, {run_, "", "/opt/bin/baton", ""}, 5).value();
  EXPECT_EQ(r.previous_status, "CANCELLED");
  EXPECT_TRUE(r.cancelled_job.empty());
  EXPECT_TRUE(r.changed.empty());
  EXPECT_EQ(RunYaml(), before);
  EXPECT_EQ(store_->GetRun(submitted_.run_id).value().status, RunStatus::kPending);
}

TEST_F(ResumeTest, ChangesOutsideSlurmAreRefusedNamingEachKey) {
  slurm_.SetState(submitted_.job_id, "PENDING", "BeginTime");
  const std::string before = RunYaml(), script = Script();
  Result<ResumeRunResult> r =
      ResumeRun(*store_, slurm_, {run_, Edited("seed: 3", "seed: 4"), "/opt/bin/baton", ""}, 5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kConfig);
  EXPECT_NE(r.status().message().find("run.seed: 3 -> 4"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(slurm_.submitted.size(), 1u);
  EXPECT_TRUE(slurm_.cancelled.empty());
  EXPECT_EQ(RunYaml(), before);
  EXPECT_EQ(Script(), script);
}

// node-b excluded by hand, and the 2-node job needs both nodes of the partition: the resumed job
// keeps it, and the refusal comes back for the caller to record and alert on.
TEST_F(ResumeTest, AnExclusionTheJobCannotFitIsReturnedNotApplied) {
  Append(tmp_ / "nodes.yaml", "max_excluded_fraction: 0.5\n");
  ::setenv("BATON_NODES_CONFIG", (tmp_ / "nodes.yaml").c_str(), 1);
  ASSERT_TRUE(store_
                  ->Write([&] {
                    return store_->SetRunStatusInTx(submitted_.run_id, RunStatus::kCancelled,
                                                    "by user", 2);
                  })
                  .ok());
  ManualNodeAction a;
  a.host = "node-b";
  a.cluster = store_->GetRun(submitted_.run_id).value().cluster;
  a.partition = "debug";
  a.user = "admin";
  a.for_s = 3600;
  ASSERT_TRUE(ExcludeNodeByHand(*store_, a, 2).ok());
  Result<ResumeRunResult> r = ResumeRun(*store_, slurm_, {run_, "", "/opt/bin/baton", ""}, 5);
  ::unsetenv("BATON_NODES_CONFIG");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->exclusion_refused.size(), 1u);
  EXPECT_EQ(r->exclusion_refused[0].host, "node-b");
  EXPECT_NE(r->exclusion_refused[0].why.find("would not fit"), std::string::npos)
      << r->exclusion_refused[0].why;
  EXPECT_EQ(Script().find("--exclude"), std::string::npos) << Script();
}

TEST_F(ResumeTest, RunningAndCompletedRunsAreRefused) {
  slurm_.SetState(submitted_.job_id, "RUNNING");
  Result<ResumeRunResult> running = ResumeRun(*store_, slurm_, {run_, "", "/opt/bin/baton", ""}, 5);
  ASSERT_FALSE(running.ok());
  EXPECT_NE(running.status().message().find("is RUNNING"), std::string::npos);
  ASSERT_TRUE(store_
                  ->Write([&] {
                    return store_->SetRunStatusInTx(submitted_.run_id, RunStatus::kCompleted,
                                                    "done", 2);
                  })
                  .ok());
  Result<ResumeRunResult> done = ResumeRun(*store_, slurm_, {run_, "", "/opt/bin/baton", ""}, 5);
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.status().code(), Code::kConfig);
  EXPECT_EQ(slurm_.submitted.size(), 1u);
}

TEST_F(ResumeTest, SbatchFailurePutsTheFilesBackAndKeepsTheWaitingJob) {
  slurm_.SetState(submitted_.job_id, "PENDING", "BeginTime");
  const std::string before = RunYaml(), script = Script();
  slurm_.reject_message = "Requested node configuration is not available";
  Result<ResumeRunResult> r =
      ResumeRun(*store_, slurm_, {run_, Edited("nodes: 2", "nodes: 1"), "/opt/bin/baton", ""}, 5);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(slurm_.cancelled.empty());
  EXPECT_EQ(RunYaml(), before);
  EXPECT_EQ(Script(), script);
  RunRecord run = store_->GetRun(submitted_.run_id).value();
  EXPECT_EQ(run.job_id, submitted_.job_id);
  EXPECT_EQ(LoadRunConfig(submitted_.run_dir + "/run.yaml").value().slurm.nodes, 2);
}

// `baton cancel`'s mark would end the resumed job at its start: resume removes it, and puts it
// back when the resume fails.
TEST_F(ResumeTest, ResumeRemovesTheCancelMarkAndPutsItBackOnFailure) {
  ASSERT_TRUE(store_
                  ->Write([&] {
                    return store_->SetRunStatusInTx(submitted_.run_id, RunStatus::kCancelled,
                                                    "by user", 2);
                  })
                  .ok());
  const std::string mark = RunFolder{submitted_.run_dir}.CancelMark();
  ASSERT_TRUE(WriteTextAtomic(mark, "cancelled\n").ok());
  slurm_.reject_message = "sbatch: error: Batch job submission failed";
  ASSERT_FALSE(ResumeRun(*store_, slurm_, {run_, "", "/opt/bin/baton", ""}, 5).ok());
  EXPECT_EQ(ReadFile(mark).value(), "cancelled\n");
  slurm_.reject_message.clear();
  ASSERT_TRUE(ResumeRun(*store_, slurm_, {run_, "", "/opt/bin/baton", ""}, 5).ok());
  EXPECT_FALSE(std::filesystem::exists(mark));
}

// An edited config's memory plan is checked as submit checks it: with slurm.mem_per_task_gb set
// and no trainer to compute the plan, the resume is refused, and nothing changes.
TEST_F(ResumeTest, EditedConfigGetsTheMemoryCheck) {
  slurm_.SetState(submitted_.job_id, "PENDING", "BeginTime");
  const std::string before = RunYaml(), script = Script();
  Result<ResumeRunResult> r = ResumeRun(
      *store_, slurm_,
      {run_, Edited("time: '10:00'", "time: '10:00', mem_per_task_gb: 4"), "/opt/bin/baton", ""},
      5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_NE(r.status().message().find("mem_per_task_gb"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(slurm_.submitted.size(), 1u);
  EXPECT_TRUE(slurm_.cancelled.empty());
  EXPECT_EQ(RunYaml(), before);
  EXPECT_EQ(Script(), script);
}

TEST(ConfigDifferencesTest, NamesEveryChangedAddedAndRemovedKey) {
  std::vector<std::string> d =
      ConfigDifferences("a: {x: 1, y: [1, 2]}\nb: {z: q}\n", "a: {x: 2, y: [1, 2]}\nc: {w: 1}\n")
          .value();
  EXPECT_EQ(d, (std::vector<std::string>{"a.x: 1 -> 2", "b.z: q -> (unset)", "c.w: (unset) -> 1"}));
}

}  // namespace
}  // namespace baton
