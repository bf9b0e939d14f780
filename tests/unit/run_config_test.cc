// The run config's defaults, the example config that documents them, and ToYaml: every key
// a config sets survives a round trip.
#include "schema/run_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "schema/atomic_file.h"
#include "tests/unit/run_config_fixture.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using test::RunConfigTest;

TEST_F(RunConfigTest, MinimalConfigGetsDefaultsAndResolvesPaths) {
  auto r = Parse(kMinimal);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const RunConfig& c = r.value();
  EXPECT_EQ(c.run.name, "cfg");
  EXPECT_EQ(c.run.steps, 10);
  EXPECT_EQ(c.data.path, tmp_ / "data");
  EXPECT_EQ(c.data.batch_size, 4);
  EXPECT_EQ(c.data.pad_multiple, 8);
  EXPECT_EQ(c.data.pool_factor, 50);
  EXPECT_EQ(c.data.plan, SamplerPlan::kGlobal);
  EXPECT_DOUBLE_EQ(c.optim.betas[1], 0.95);
  EXPECT_EQ(c.slurm.signal, Signal::kUsr1);
  EXPECT_EQ(c.train.dtype, DType::kFloat32);
}

TEST_F(RunConfigTest, ExampleConfigDocumentsExactlyTheDefaults) {
  auto text = ReadFile(std::string(BATON_SOURCE_DIR) + "/configs/example.yaml");
  ASSERT_TRUE(text.ok());
  // The example's data path is ../out/demo-data relative to configs/.
  fs::create_directories(tmp_ / "out/demo-data");
  fs::create_directories(tmp_ / "configs");
  auto example = ParseRunConfig(text.value(), tmp_ / "configs/example.yaml");
  ASSERT_TRUE(example.ok()) << example.status().ToString();
  auto minimal = ParseRunConfig("run: {steps: 1000}\ndata: {path: ../out/demo-data}\n",
                                tmp_ / "configs/example.yaml");
  ASSERT_TRUE(minimal.ok()) << minimal.status().ToString();
  EXPECT_EQ(ToYaml(example.value()), ToYaml(minimal.value()));
}

TEST_F(RunConfigTest, ToYamlRoundTrips) {
  auto r = Parse(std::string(kMinimal) +
                 "optim: {lr: 3.0e-5, betas: [0.8, 0.99], warmup_steps: 7}\n"
                 "model: {dim: 96, heads: 4}\nrun2: 1\n");
  ASSERT_FALSE(r.ok());  // run2 is unknown
  r = Parse(std::string(kMinimal) + "optim: {lr: 3.0e-5, betas: [0.8, 0.99], warmup_steps: 7}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string yaml = ToYaml(r.value());
  auto again = ParseRunConfig(yaml, tmp_ / "again.yaml");
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << yaml;
  EXPECT_EQ(ToYaml(again.value()), yaml);
  EXPECT_DOUBLE_EQ(again->optim.lr, 3e-5);
  EXPECT_DOUBLE_EQ(again->optim.betas[0], 0.8);
}

TEST_F(RunConfigTest, DeterministicIsTrueOrFalseAndRoundTrips) {
  EXPECT_FALSE(Parse(kMinimal)->train.deterministic);
  auto on = Parse(std::string(kMinimal) + "train: {deterministic: true}\n");
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_TRUE(on->train.deterministic);
  auto again = Parse(ToYaml(on.value()));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->train.deterministic);
  const std::string e = Error(std::string(kMinimal) + "train: {deterministic: sometimes}\n");
  EXPECT_NE(e.find("train.deterministic"), std::string::npos) << e;
  EXPECT_NE(e.find("sometimes"), std::string::npos) << e;
}

TEST_F(RunConfigTest, RequeueHoldReleaseKeys) {
  const RunConfig defaults = Parse(kMinimal).value();
  EXPECT_TRUE(defaults.slurm.release_requeue_hold);
  EXPECT_DOUBLE_EQ(defaults.slurm.release_hold_after_s, 3.0);
  auto off = Parse(std::string(kMinimal) +
                   "slurm: {release_requeue_hold: false, release_hold_after_s: 10}\n");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->slurm.release_requeue_hold);
  auto again = Parse(ToYaml(off.value()));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->slurm.release_requeue_hold);
  EXPECT_DOUBLE_EQ(again->slurm.release_hold_after_s, 10.0);
  // Under a second the new launch credential may not be newer than the revoked one.
  std::string e = Error(std::string(kMinimal) + "slurm: {release_hold_after_s: 0.5}\n");
  EXPECT_NE(e.find("slurm.release_hold_after_s: value 0.5 is out of range (must be in [1"),
            std::string::npos)
      << e;
  e = Error(std::string(kMinimal) + "slurm: {release_hold_after_s: 1e9}\n");
  EXPECT_NE(e.find("slurm.release_hold_after_s"), std::string::npos) << e;
  e = Error(std::string(kMinimal) + "slurm: {release_requeue_hold: maybe}\n");
  EXPECT_NE(e.find("slurm.release_requeue_hold"), std::string::npos) << e;
  EXPECT_NE(e.find("maybe"), std::string::npos) << e;
}

TEST_F(RunConfigTest, HangKeys) {
  const RunConfig defaults = Parse(kMinimal).value();
  EXPECT_DOUBLE_EQ(defaults.train.hang_min_s, 60.0);
  EXPECT_DOUBLE_EQ(defaults.train.hang_factor, 5.0);
  EXPECT_DOUBLE_EQ(defaults.train.first_step_timeout_s, 600.0);
  EXPECT_EQ(defaults.slurm.in_job_restarts, 2);
  auto set = Parse(std::string(kMinimal) +
                   "train: {hang_min_s: 3, hang_factor: 2.5, first_step_timeout_s: 30}\n"
                   "slurm: {in_job_restarts: 0}\n");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  auto again = Parse(ToYaml(set.value()));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_DOUBLE_EQ(again->train.hang_min_s, 3.0);
  EXPECT_DOUBLE_EQ(again->train.hang_factor, 2.5);
  EXPECT_DOUBLE_EQ(again->train.first_step_timeout_s, 30.0);
  EXPECT_EQ(again->slurm.in_job_restarts, 0);
  for (const char* bad :
       {"train: {hang_min_s: 0.5}", "train: {hang_factor: 0}", "train: {first_step_timeout_s: 1e6}",
        "slurm: {in_job_restarts: -1}", "slurm: {in_job_restarts: 101}"}) {
    const std::string e = Error(std::string(kMinimal) + bad + "\n");
    const std::string yaml = bad;
    const std::string key =
        yaml.substr(0, yaml.find(':')) + "." +
        yaml.substr(yaml.find('{') + 1, yaml.find(':', yaml.find('{')) - yaml.find('{') - 1);
    EXPECT_NE(e.find(key + ": value"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("out of range"), std::string::npos) << bad << ": " << e;
  }
}

}  // namespace
}  // namespace baton
