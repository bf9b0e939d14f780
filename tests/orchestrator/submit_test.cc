// Submit with the fake SLURM: all or nothing, the rendered script, dry runs.
#include "orchestrator/submit/submitter.h"

#include <gtest/gtest.h>

#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/submit/sbatch_script.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::OpenStore;
using test::TempDir;

class SubmitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Append(tmp_ / "data/.keep", "");
    Append(tmp_ / "cfg.yaml",
           "run: {name: My Exp, steps: 20}\ndata: {path: data}\n"
           "slurm: {partition: debug, cpus_per_task: 2, time: '10:00', signal: USR2, "
           "signal_lead_s: 45, gpus_per_node: 1}\n");
    store_ = OpenStore(tmp_ / "home/baton.db");
    req_.config_path = tmp_ / "cfg.yaml";
    req_.baton_bin = "/opt/bin/baton";
    req_.baton_home = tmp_ / "home";
  }
  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  SubmitRequest req_;
};

TEST_F(SubmitTest, CreatesTheRunItsFolderAndTheJob) {
  SubmitResult r = SubmitRun(store_.get(), slurm_, req_, 1).value();
  EXPECT_EQ(r.job_id, "1000");
  EXPECT_EQ(r.run_dir, tmp_ / ("home/runs/" + std::to_string(r.run_id) + "-my-exp"));
  RunRecord run = store_->GetRun(r.run_id).value();
  EXPECT_EQ(run.job_id, "1000");
  EXPECT_EQ(run.status, RunStatus::kPending);
  EXPECT_EQ(run.target_steps, 20);
  EXPECT_EQ(run.name, "My Exp");
  EXPECT_TRUE(std::filesystem::exists(r.run_dir + "/run.yaml"));
  EXPECT_TRUE(std::filesystem::is_directory(r.run_dir + "/logs"));
  Result<RunConfig> frozen = LoadRunConfig(r.run_dir + "/run.yaml");
  ASSERT_TRUE(frozen.ok()) << frozen.status().ToString();
  EXPECT_EQ(frozen->run.dir, r.run_dir);
  EXPECT_EQ(slurm_.submitted, std::vector<std::string>{r.run_dir + "/sbatch.sh"});
  for (const std::string& line : std::vector<std::string>{
           "#SBATCH --requeue", "#SBATCH --open-mode=append", "#SBATCH --signal=B:USR2@45",
           "#SBATCH --partition=debug", "#SBATCH --cpus-per-task=2", "#SBATCH --time=10:00",
           "#SBATCH --gpus-per-node=1", "#SBATCH --output=" + r.run_dir + "/logs/%j.out",
           "exec '/opt/bin/baton' launch '" + r.run_dir + "'"}) {
    EXPECT_NE(r.script.find(line + "\n"), std::string::npos) << line << "\n" << r.script;
  }
  EXPECT_EQ(r.script.find("--qos"), std::string::npos);  // empty: line dropped
  EXPECT_EQ(r.script.find("{{"), std::string::npos);
}

TEST_F(SubmitTest, SlurmDownLeavesNothingBehind) {
  slurm_.down = true;
  Result<SubmitResult> r = SubmitRun(store_.get(), slurm_, req_, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_TRUE(store_->ListRuns().value().empty());
  EXPECT_FALSE(std::filesystem::exists(tmp_ / "home/runs/1-my-exp"));
}

TEST_F(SubmitTest, RejectedBySlurmLeavesNothingBehind) {
  slurm_.reject_message = "invalid partition specified: debug";
  Result<SubmitResult> r = SubmitRun(store_.get(), slurm_, req_, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kConfig);
  EXPECT_NE(r.status().message().find("invalid partition"), std::string::npos);
  EXPECT_TRUE(store_->ListRuns().value().empty());
  EXPECT_TRUE(std::filesystem::is_empty(tmp_ / "home/runs"));
}

TEST_F(SubmitTest, AnExistingRunDirIsRefusedAndKept) {
  Append(tmp_ / "used/run.yaml", "run: {}\n");
  Append(tmp_ / "cfg2.yaml", "run: {steps: 5, dir: used}\ndata: {path: data}\n");
  req_.config_path = tmp_ / "cfg2.yaml";
  Result<SubmitResult> r = SubmitRun(store_.get(), slurm_, req_, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kConfig);
  EXPECT_TRUE(std::filesystem::exists(tmp_ / "used/run.yaml"));
  EXPECT_TRUE(store_->ListRuns().value().empty());
}

TEST_F(SubmitTest, BadConfigIsAConfigError) {
  Append(tmp_ / "bad.yaml", "run: {steps: 10\n");
  req_.config_path = tmp_ / "bad.yaml";
  Result<SubmitResult> r = SubmitRun(store_.get(), slurm_, req_, 1);
  EXPECT_EQ(r.status().code(), Code::kConfig);
  EXPECT_TRUE(slurm_.submitted.empty());
}

TEST_F(SubmitTest, UnsafeValuesNeverReachTheScript) {
  Append(tmp_ / "evil.yaml",
         "run: {steps: 5}\ndata: {path: data}\nslurm: {partition: \"debug\\n#SBATCH --wrap=x\"}\n");
  req_.config_path = tmp_ / "evil.yaml";
  Result<SubmitResult> r = SubmitRun(store_.get(), slurm_, req_, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kConfig);
  EXPECT_NE(r.status().message().find("slurm.partition"), std::string::npos);
  EXPECT_TRUE(store_->ListRuns().value().empty());
}

TEST_F(SubmitTest, DryRunTouchesNothing) {
  req_.dry_run = true;
  SubmitResult r = SubmitRun(nullptr, slurm_, req_, 1).value();
  EXPECT_NE(r.script.find("#SBATCH --requeue"), std::string::npos);
  EXPECT_TRUE(slurm_.submitted.empty());
  EXPECT_TRUE(store_->ListRuns().value().empty());
  EXPECT_FALSE(std::filesystem::exists(tmp_ / "home/runs"));
}

TEST(SbatchScript, RendersConditionalLinesAndRefusesUnknownKeys) {
  EXPECT_EQ(RenderTemplate("a={{A}}\n{{?B}}b={{B}}\n{{?C}}c\n", {{"A", "1"}, {"B", "2"}, {"C", ""}})
                .value(),
            "a=1\nb=2\n");
  EXPECT_EQ(RenderTemplate("{{X}}\n", {}).status().code(), Code::kInternal);
  EXPECT_EQ(Slugify("My Exp #3!"), "my-exp-3");
  EXPECT_EQ(Slugify("!!!"), "run");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

}  // namespace
}  // namespace baton
