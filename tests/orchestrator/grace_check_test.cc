// The grace a job is told and the figures behind it: BATON_GRACE_S's one spelling, a cached write
// rate that is no measurement (measured again, --strict included), `baton resume` weighing the
// stop save and exporting the grace as submit does, and a cuda run's host memory key held to
// the plan at submit and at resume.
#include "orchestrator/submit/grace_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "fake_planner.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/submit/memory_check.h"
#include "orchestrator/submit/resumer.h"
#include "orchestrator/submit/submitter.h"
#include "orchestrator/submit/write_probe.h"
#include "schema/atomic_file.h"
#include "schema/grace_seconds.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::FakePlanner;
using test::OpenStore;
using test::TempDir;

TEST(GraceSeconds, OnlyDecimalSecondsInRange) {
  EXPECT_EQ(ParseGraceSeconds("30").value(), 30.0);
  EXPECT_EQ(ParseGraceSeconds("2.5").value(), 2.5);
  EXPECT_EQ(ParseGraceSeconds("0").value(), 0.0);
  EXPECT_EQ(ParseGraceSeconds("86400").value(), 86400.0);
  for (const char* bad : {"0x10", "1e308", "1e3", "nan", "inf", "-1", "+3", "", " 30", "30 ", "3.",
                          ".5", "86400.5", "99999999999999999999", "soon", "3,5"}) {
    Result<double> r = ParseGraceSeconds(bad);
    ASSERT_FALSE(r.ok()) << "'" << bad << "' was accepted as " << r.value();
    EXPECT_EQ(r.status().code(), Code::kConfig);
    EXPECT_NE(r.status().message().find(std::string("BATON_GRACE_S='") + bad + "'"),
              std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("decimal seconds in [0, 86400]"), std::string::npos);
  }
  // What submit and resume write is always what the trainer reads.
  for (double g : {0.0, 0.4, 35.0, 86400.0, 1e308, -3.0, std::nan("")}) {
    const std::string text = GraceSecondsText(g);
    ASSERT_TRUE(ParseGraceSeconds(text).ok()) << g << " -> " << text;
  }
  EXPECT_EQ(GraceSecondsText(35.9), "35");
  EXPECT_EQ(GraceSecondsText(1e308), "86400");
}

class GraceCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Append(tmp_ / "data/.keep", "");
    std::filesystem::create_directories(tmp_ / "home/runs");
    store_ = OpenStore(tmp_ / "home/baton.db");
    req_.baton_bin = "/opt/bin/baton";
    req_.baton_home = tmp_ / "home";
  }
  std::string Config(const std::string& name, const std::string& extra) {
    const std::string path = tmp_ / name;
    std::filesystem::remove(path);
    Append(path, "run: {name: g, steps: 5}\ndata: {path: data}\n" + extra);
    return path;
  }
  std::string Script(const SubmitResult& r) { return ReadFile(r.run_dir + "/sbatch.sh").value(); }
  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  SubmitRequest req_;
};

TEST_F(GraceCheckTest, ACachedRateOutOfRangeIsMeasuredAgain) {
  const std::string folder = tmp_ / "home/runs";
  RunConfig config;
  config.slurm.preempt_grace_s = 60;
  for (double bad : {-5.0, 0.0, 1e9}) {
    ASSERT_TRUE(store_->PutWriteProbe({folder, bad, kWriteProbeBytes, 100}).ok());
    StopSaveBudgetRecord b =
        PlanStopSave(config, 1000000, slurm_, store_.get(), folder, 200).value();
    EXPECT_TRUE(PlausibleWriteRate(b.write_gbps)) << bad << " -> " << b.write_gbps;
    EXPECT_GT(b.predicted_s, 0.0);
    EXPECT_NE(b.write_source.find("is outside [0.0001, 1000] GB/s and was measured again"),
              std::string::npos)
        << b.write_source;
    const WriteProbeRecord cached = store_->GetWriteProbe(folder).value().value();
    EXPECT_EQ(cached.measured_at, 200);
    EXPECT_EQ(cached.gbps, b.write_gbps);
  }
}

TEST_F(GraceCheckTest, StrictRefusesWhatANegativeCachedRateWouldHavePassed) {
  ASSERT_TRUE(store_->PutWriteProbe({tmp_ / "home/runs", -5, kWriteProbeBytes, 1}).ok());
  req_.config_path = Config("g.yaml", "");
  req_.trainer_bin = FakePlanner(tmp_.path(), 300000000000);  // 300 GB per rank, 35 s grace
  req_.strict = true;
  Result<SubmitResult> r = SubmitRun(store_.get(), slurm_, req_, 2);
  ASSERT_FALSE(r.ok()) << "a -5 GB/s cached rate let --strict pass: "
                       << (r.ok() && r->budget ? r->budget->write_source : "");
  EXPECT_EQ(r.status().code(), Code::kConfig);
  EXPECT_NE(r.status().message().find("the stop save may not fit"), std::string::npos);
  EXPECT_TRUE(slurm_.submitted.empty());
}

TEST_F(GraceCheckTest, ResumeWeighsTheStopSaveAndExportsTheGrace) {
  req_.config_path = Config("g.yaml", "checkpoint: {write_gbps: 2}\n");
  req_.trainer_bin = FakePlanner(tmp_.path(), 10000000000);  // 10 GB at 2 GB/s: 5 s
  const SubmitResult s = SubmitRun(store_.get(), slurm_, req_, 1).value();
  EXPECT_NE(Script(s).find("\nexport BATON_GRACE_S=35\n"), std::string::npos);
  slurm_.SetState(s.job_id, "PENDING", "BeginTime");
  slurm_.grace = {"debug", 60, 5};  // the partition's grace changed since
  ResumeRunRequest resume{std::to_string(s.run_id), "", "/opt/bin/baton", req_.trainer_bin};
  const ResumeRunResult r = ResumeRun(*store_, slurm_, resume, 5).value();
  EXPECT_TRUE(r.warnings.empty());
  ASSERT_TRUE(r.budget);
  EXPECT_DOUBLE_EQ(r.budget->grace_s, 65.0);
  EXPECT_NE(Script(s).find("\nexport BATON_GRACE_S=65\n"), std::string::npos) << Script(s);
  const StopSaveBudgetRecord stored = store_->GetStopSaveBudget(s.run_id).value().value();
  EXPECT_DOUBLE_EQ(stored.grace_s, 65.0);
  EXPECT_EQ(stored.checked_at, 5);

  // A stop save that no longer fits: a warning, and with --strict a refusal that changes nothing.
  slurm_.SetState(r.job_id, "PENDING", "BeginTime");
  const std::string script = Script(s);
  resume.trainer_bin = FakePlanner(tmp_.path(), 100000000000);  // 100 GB at 2 GB/s: 50 s
  resume.strict = true;
  Result<ResumeRunResult> refused = ResumeRun(*store_, slurm_, resume, 6);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kConfig);
  EXPECT_NE(refused.status().message().find("--strict refuses it"), std::string::npos);
  EXPECT_EQ(Script(s), script);
  EXPECT_EQ(slurm_.submitted.size(), 2u);
  resume.strict = false;
  const ResumeRunResult warned = ResumeRun(*store_, slurm_, resume, 7).value();
  ASSERT_EQ(warned.warnings.size(), 1u);
  EXPECT_NE(warned.warnings[0].find("the stop save may not fit"), std::string::npos);
  EXPECT_NE(Script(s).find("\nexport BATON_GRACE_S=65\n"), std::string::npos);
}

// The plan of a cuda run with checkpoint.async: its host snapshot is host memory beside the
// device total (plan-memory's "checkpoint snapshot (host)").
MemoryPlanReport CudaPlan() {
  MemoryPlanReport p;
  p.device = Device::kCuda;
  p.checkpoint_snapshot_in_total = false;
  p.bytes.checkpoint_snapshot = int64_t(177) << 20;
  p.bytes.total = int64_t(1) << 30;
  p.checkpoint.bytes_per_rank_max = 1000000;
  return p;
}

TEST(CudaHostMemory, TheHostKeyIsHeldToThePlan) {
  RunConfig config;
  config.train.device = Device::kCuda;
  config.slurm.mem_per_task_gb = 0.0001;
  const MemoryPlanReport plan = CudaPlan();
  Status st = CheckMemoryPlan(config, "cfg.yaml", "", &plan);
  ASSERT_EQ(st.code(), Code::kConfig) << st.ToString();
  EXPECT_NE(st.message().find("cfg.yaml: slurm.mem_per_task_gb: the run's memory plan needs "
                              "177.0 MiB of host memory per rank"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("more than the 0.0001 GiB"), std::string::npos);
  config.slurm.mem_per_task_gb = 1;
  EXPECT_TRUE(CheckMemoryPlan(config, "cfg.yaml", "", &plan).ok());
  // Set, with no trainer to plan it: not passed silently, as the device key is not.
  config.slurm.mem_per_task_gb = 0.0001;
  st = CheckMemoryPlan(config, "cfg.yaml", "");
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_NE(st.message().find("slurm.mem_per_task_gb is set"), std::string::npos);
}

TEST_F(GraceCheckTest, ACudaRunsHostKeyIsRefusedAtSubmitAndAtResume) {
  req_.trainer_bin = FakePlanner(tmp_.path(), CudaPlan());
  req_.config_path =
      Config("c.yaml", "train: {device: cuda}\nslurm: {mem_per_task_gb: 0.0001, time: '10:00'}\n");
  Result<SubmitResult> r = SubmitRun(store_.get(), slurm_, req_, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kConfig);
  EXPECT_NE(r.status().message().find("slurm.mem_per_task_gb"), std::string::npos);
  EXPECT_TRUE(store_->ListRuns().value().empty());

  req_.config_path = Config("c.yaml", "train: {device: cuda}\nslurm: {time: '10:00'}\n");
  const SubmitResult s = SubmitRun(store_.get(), slurm_, req_, 1).value();
  slurm_.SetState(s.job_id, "PENDING", "BeginTime");
  const std::string edited =
      Config("c2.yaml", "train: {device: cuda}\nslurm: {mem_per_task_gb: 0.0001, time: '10:00'}\n");
  Result<ResumeRunResult> resumed = ResumeRun(
      *store_, slurm_, {std::to_string(s.run_id), edited, "/opt/bin/baton", req_.trainer_bin}, 5);
  ASSERT_FALSE(resumed.ok());
  EXPECT_EQ(resumed.status().code(), Code::kConfig);
  EXPECT_NE(resumed.status().message().find("c2.yaml: slurm.mem_per_task_gb"), std::string::npos)
      << resumed.status().message();
  EXPECT_EQ(slurm_.submitted.size(), 1u);
}

}  // namespace
}  // namespace baton
