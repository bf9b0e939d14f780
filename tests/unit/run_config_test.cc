#include "schema/run_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "schema/atomic_file.h"
#include "temp_dir.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

class RunConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(tmp_ / "data"); }
  // Parses `yaml` as if read from <tmp>/cfg.yaml (so data: data resolves to <tmp>/data).
  Result<RunConfig> Parse(const std::string& yaml) { return ParseRunConfig(yaml, tmp_ / "cfg.yaml"); }
  std::string Error(const std::string& yaml) {
    auto r = Parse(yaml);
    EXPECT_FALSE(r.ok()) << "expected an error for:\n" << yaml;
    if (r.ok()) return "";
    EXPECT_EQ(r.status().code(), Code::kConfig);
    EXPECT_EQ(r.status().exit_code(), 78);
    return r.status().message();
  }
  static constexpr const char* kMinimal = "run: {steps: 10}\ndata: {path: data}\n";
  testing::TempDir tmp_;
};

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
  EXPECT_EQ(c.slurm.signal, "USR1");
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

TEST_F(RunConfigTest, PadMultipleZeroIsOutOfRange) {
  const std::string e2 = Error("run: {steps: 10}\ndata:\n  path: data\n  pad_multiple: 0\n");
  EXPECT_NE(e2.find("cfg.yaml:4:17: data.pad_multiple: value 0 is out of range (must be in [1, 4096])"),
            std::string::npos)
      << e2;
}

TEST_F(RunConfigTest, NegativeLrIsOutOfRange) {
  const std::string e = Error(std::string(kMinimal) + "optim:\n  lr: -0.001\n");
  EXPECT_NE(e.find("cfg.yaml:4:7: optim.lr: value -0.001 is out of range (must be > 0.0)"),
            std::string::npos)
      << e;
}

TEST_F(RunConfigTest, BatchSizeZeroAndGradAccumZero) {
  const std::string e = Error(
      "run: {steps: 10}\ndata: {path: data, batch_size: 0}\noptim: {grad_accum: 0}\n");
  EXPECT_NE(e.find("data.batch_size: value 0 is out of range"), std::string::npos) << e;
  EXPECT_NE(e.find("optim.grad_accum: value 0 is out of range"), std::string::npos) << e;
  EXPECT_NE(e.find('\n'), std::string::npos) << "both errors are reported at once";
}

TEST_F(RunConfigTest, MissingDataPathKey) {
  const std::string e = Error("run: {steps: 10}\ndata: {batch_size: 2}\n");
  EXPECT_NE(e.find("data.path: required key is missing"), std::string::npos) << e;
  const std::string e2 = Error("run: {steps: 10}\n");
  EXPECT_NE(e2.find("data.path: required key is missing"), std::string::npos) << e2;
}

TEST_F(RunConfigTest, DataPathThatDoesNotExist) {
  const std::string e = Error("run: {steps: 10}\ndata: {path: nowhere/at/all}\n");
  EXPECT_NE(e.find("data.path: no such dataset folder '" + (tmp_ / "nowhere/at/all") + "'"),
            std::string::npos)
      << e;
}

TEST_F(RunConfigTest, UnknownKeysAndSections) {
  const std::string e = Error(std::string(kMinimal) + "optim: {lr: 0.1, learning_rate: 0.1}\n");
  EXPECT_NE(e.find("cfg.yaml:3:18: optim.learning_rate: unknown key"), std::string::npos) << e;
  const std::string e2 = Error(std::string(kMinimal) + "trainer: {steps: 3}\n");
  EXPECT_NE(e2.find("cfg.yaml:3:1: trainer: unknown section"), std::string::npos) << e2;
}

TEST_F(RunConfigTest, WrongTypes) {
  EXPECT_NE(Error("run: {steps: ten}\ndata: {path: data}\n")
                .find("run.steps: expected an integer, got 'ten'"),
            std::string::npos);
  EXPECT_NE(Error("run: {steps: \"10\"}\ndata: {path: data}\n")
                .find("run.steps: expected an integer, got '10'"),
            std::string::npos)
      << "a quoted number is a string";
  EXPECT_NE(Error("run: {steps: 2.5}\ndata: {path: data}\n").find("run.steps: expected an integer"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "optim: {lr: [1, 2]}\n")
                .find("optim.lr: expected a finite number, got a list"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "optim: {lr: .nan}\n").find("optim.lr: expected a finite"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "slurm: 3\n").find("slurm: expected a mapping"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "train: {dtype: float16}\n")
                .find("train.dtype: expected one of float32, float64, bfloat16, got 'float16'"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "optim: {betas: [0.9]}\n").find("optim.betas: expected"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "optim: {betas: [0.9, 1.0]}\n")
                .find("optim.betas: values [0.9, 1.0] are out of range"),
            std::string::npos);
}

TEST_F(RunConfigTest, CrossFieldChecks) {
  EXPECT_NE(Error(std::string(kMinimal) + "model: {dim: 64, heads: 5}\n")
                .find("model.dim: value 64 is not divisible by model.heads 5"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "model: {dim: 16, heads: 4}\n")
                .find("head size dim/heads = 4 must be even and >= 6"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "objective: {chunk_min: 5, chunk_max: 4}\n")
                .find("objective.chunk_min: value 5 exceeds objective.chunk_max 4"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "slurm: {time: soon}\n")
                .find("slurm.time: expected a SLURM time limit"),
            std::string::npos);
  EXPECT_TRUE(Parse(std::string(kMinimal) + "slurm: {time: 2-12:00:00}\n").ok());
}

TEST_F(RunConfigTest, MalformedYamlNamesFileAndLine) {
  const std::string e = Error("run: {steps: 10\ndata: [\n");
  EXPECT_NE(e.find("cfg.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed YAML"), std::string::npos) << e;
  EXPECT_NE(Error("").find("got an empty file"), std::string::npos);
  EXPECT_NE(Error("- 1\n- 2\n").find("expected a mapping with sections"), std::string::npos);
}

TEST_F(RunConfigTest, MissingFile) {
  auto r = LoadRunConfig(tmp_ / "absent.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 78);
  EXPECT_NE(r.status().message().find("absent.yaml: cannot read"), std::string::npos);
}

}  // namespace
}  // namespace baton
