// Submit with the fake SLURM: all or nothing, the rendered script, dry runs.
#include "orchestrator/submit/submitter.h"

#include <gtest/gtest.h>

#include "fake_planner.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/submit/grace_check.h"
#include "orchestrator/submit/sbatch_script.h"
#include "orchestrator/submit/write_probe.h"
#include "schema/memory_plan_report.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::FakePlanner;
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

TEST_F(SubmitTest, AStopSaveThatFitsIsStoredAndTheGraceReachesTheJob) {
  Append(tmp_ / "g.yaml", "run: {steps: 5}\ndata: {path: data}\ncheckpoint: {write_gbps: 2}\n");
  req_.config_path = tmp_ / "g.yaml";
  req_.trainer_bin = FakePlanner(tmp_.path(), 10000000000);  // 10 GB per rank at 2 GB/s: 5 s
  SubmitResult r = SubmitRun(store_.get(), slurm_, req_, 1).value();
  EXPECT_TRUE(r.warnings.empty());
  const StopSaveBudgetRecord b = store_->GetStopSaveBudget(r.run_id).value().value();
  EXPECT_EQ(b.bytes_per_rank, 10000000000);
  EXPECT_DOUBLE_EQ(b.predicted_s, 5.0);
  EXPECT_DOUBLE_EQ(b.grace_s, 35.0);  // the fake's GraceTime 30 + KillWait 5
  EXPECT_EQ(b.grace_source, "partition debug: GraceTime 30 s + KillWait 5 s");
  EXPECT_EQ(b.write_source, "checkpoint.write_gbps");
  EXPECT_TRUE(b.fits);
  EXPECT_NE(r.script.find("\nexport BATON_GRACE_S=35\n"), std::string::npos) << r.script;
}

TEST_F(SubmitTest, AStopSaveThatDoesNotFitWarnsAndStrictRefusesIt) {
  Append(tmp_ / "g.yaml", "run: {steps: 5}\ndata: {path: data}\ncheckpoint: {write_gbps: 1}\n");
  req_.config_path = tmp_ / "g.yaml";
  // 30 GB at 1 GB/s: 30 s, within the 35 s grace but not with the margin (45 s).
  req_.trainer_bin = FakePlanner(tmp_.path(), 30000000000);
  SubmitResult r = SubmitRun(store_.get(), slurm_, req_, 1).value();
  ASSERT_EQ(r.warnings.size(), 1u);
  for (const char* part : {"30.00 GB per rank", "30.0 s", "grace is 35 s", "more ranks",
                           "checkpoint.async", "faster checkpoint folder"}) {
    EXPECT_NE(r.warnings[0].find(part), std::string::npos) << part << ": " << r.warnings[0];
  }
  EXPECT_FALSE(store_->GetStopSaveBudget(r.run_id).value().value().fits);

  req_.strict = true;
  const size_t runs = store_->ListRuns().value().size();
  Result<SubmitResult> refused = SubmitRun(store_.get(), slurm_, req_, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kConfig);  // exit 78
  EXPECT_NE(refused.status().message().find("g.yaml"), std::string::npos);
  EXPECT_EQ(store_->ListRuns().value().size(), runs);  // nothing created
  EXPECT_EQ(slurm_.submitted.size(), 1u);
}

TEST_F(SubmitTest, TheConfiguredGraceWinsOverSlurms) {
  Append(tmp_ / "g.yaml",
         "run: {steps: 5}\ndata: {path: data}\ncheckpoint: {write_gbps: 1}\n"
         "slurm: {preempt_grace_s: 120}\n");
  req_.config_path = tmp_ / "g.yaml";
  req_.trainer_bin = FakePlanner(tmp_.path(), 30000000000);
  slurm_.down = false;
  slurm_.grace = {"debug", 0, 1};  // would not fit: the key must be what is used
  SubmitResult r = SubmitRun(store_.get(), slurm_, req_, 1).value();
  const StopSaveBudgetRecord b = store_->GetStopSaveBudget(r.run_id).value().value();
  EXPECT_DOUBLE_EQ(b.grace_s, 120.0);
  EXPECT_EQ(b.grace_source, "slurm.preempt_grace_s");
  EXPECT_TRUE(b.fits);
}

TEST_F(SubmitTest, TheWriteRateIsProbedOncePerFolder) {
  Append(tmp_ / "g.yaml", "run: {steps: 5}\ndata: {path: data}\n");
  req_.config_path = tmp_ / "g.yaml";
  req_.trainer_bin = FakePlanner(tmp_.path(), 1000000);
  // The probe writes where the run folder will go: $BATON_HOME/runs once it exists (before, its
  // nearest existing parent).
  const std::string folder = tmp_ / "home/runs";
  std::filesystem::create_directories(folder);
  SubmitResult first = SubmitRun(store_.get(), slurm_, req_, 100).value();
  const WriteProbeRecord probe = store_->GetWriteProbe(folder).value().value();
  EXPECT_GT(probe.gbps, 0.0);
  EXPECT_EQ(probe.bytes, kWriteProbeBytes);
  EXPECT_EQ(probe.measured_at, 100);
  const StopSaveBudgetRecord b = store_->GetStopSaveBudget(first.run_id).value().value();
  EXPECT_EQ(b.write_gbps, probe.gbps);
  EXPECT_NE(b.write_source.find("probe of " + folder), std::string::npos) << b.write_source;
  // Within the day the cached figure is used; the probe file never stays behind.
  SubmitRun(store_.get(), slurm_, req_, 200).value();
  EXPECT_EQ(store_->GetWriteProbe(folder).value().value().measured_at, 100);
  SubmitRun(store_.get(), slurm_, req_, 100 + kWriteProbeMaxAgeS + 1).value();
  EXPECT_EQ(store_->GetWriteProbe(folder).value().value().measured_at,
            100 + kWriteProbeMaxAgeS + 1);
  for (const auto& e : std::filesystem::directory_iterator(folder)) {
    EXPECT_EQ(e.path().filename().string().rfind(".baton-write-probe", 0), std::string::npos);
  }
}

TEST(WriteProbe, AFolderThatCannotTakeAFileIsAnIoErrorNamingIt) {
  TempDir tmp;
  const std::string folder = tmp / "missing";
  Result<double> r = ProbeWriteRate(folder, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kIo);
  EXPECT_NE(r.status().message().find(folder), std::string::npos);
  EXPECT_NE(r.status().message().find("choose another folder"), std::string::npos);
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
