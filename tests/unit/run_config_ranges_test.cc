// The config sections' rules: each key's type and range, the rules across keys, and the
// device the caller can or cannot check, each a 78 naming the file, line, key and value.
#include "schema/run_config.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/run_config_fixture.h"

namespace baton {
namespace {

using test::RunConfigTest;

TEST_F(RunConfigTest, PadMultipleZeroIsOutOfRange) {
  const std::string e2 = Error("run: {steps: 10}\ndata:\n  path: data\n  pad_multiple: 0\n");
  EXPECT_NE(
      e2.find("cfg.yaml:4:17: data.pad_multiple: value 0 is out of range (must be in [1, 4096])"),
      std::string::npos)
      << e2;
}

TEST_F(RunConfigTest, ShardedMasterNeedsShardedOptimizerState) {
  const std::string e = Error(std::string(kMinimal) + "optim:\n  master: sharded\n");
  EXPECT_NE(e.find("cfg.yaml:4:11: optim.master: value sharded needs optim.shard optimizer or "
                   "gradients"),
            std::string::npos)
      << e;
  for (const char* shard : {"optimizer", "gradients"}) {
    auto r = Parse(std::string(kMinimal) + "optim: {shard: " + shard + ", master: sharded}\n");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value().optim.master, OptimMaster::kSharded);
  }
  EXPECT_EQ(Parse(kMinimal).value().optim.master, OptimMaster::kReplicated);
  const std::string bad = Error(std::string(kMinimal) + "optim: {shard: optimizer, master: all}\n");
  EXPECT_NE(bad.find("optim.master"), std::string::npos) << bad;
}

TEST_F(RunConfigTest, NegativeLrIsOutOfRange) {
  const std::string e = Error(std::string(kMinimal) + "optim:\n  lr: -0.001\n");
  EXPECT_NE(e.find("cfg.yaml:4:7: optim.lr: value -0.001 is out of range (must be > 0.0)"),
            std::string::npos)
      << e;
}

TEST_F(RunConfigTest, BatchSizeZeroAndGradAccumZero) {
  const std::string e =
      Error("run: {steps: 10}\ndata: {path: data, batch_size: 0}\noptim: {grad_accum: 0}\n");
  EXPECT_NE(e.find("data.batch_size: value 0 is out of range"), std::string::npos) << e;
  EXPECT_NE(e.find("optim.grad_accum: value 0 is out of range"), std::string::npos) << e;
  EXPECT_NE(e.find('\n'), std::string::npos) << "both errors are reported at once";
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
  EXPECT_NE(
      Error(std::string(kMinimal) + "optim: {lr: .nan}\n").find("optim.lr: expected a finite"),
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

TEST_F(RunConfigTest, FloatsBeyondFloat32AndNonFiniteNameKeyAndValue) {
  const std::string range = "is out of range (must be finite and within float32's range";
  std::string e = Error(std::string(kMinimal) + "optim: {lr: 1e39}\n");
  EXPECT_NE(e.find("cfg.yaml:3:13: optim.lr: value 1e39 " + range), std::string::npos) << e;
  e = Error(std::string(kMinimal) + "optim: {lr: 1.0e+400}\n");
  EXPECT_NE(e.find("optim.lr: value 1.0e+400 " + range), std::string::npos) << e;
  e = Error(std::string(kMinimal) + "model: {rope_theta: -4e38}\n");
  EXPECT_NE(e.find("model.rope_theta: value -4e38 " + range), std::string::npos) << e;
  for (const std::string v : {".inf", "-.inf", ".nan", ".NaN", "inf", "nan"}) {
    for (const std::string key : {"optim: {lr: ", "optim: {grad_clip: ", "model: {eps: ",
                                  "objective: {video_shift: ", "optim: {weight_decay: "}) {
      e = Error(std::string(kMinimal) + key + v + "}\n");
      EXPECT_NE(e.find("expected a finite number, got '" + v + "'"), std::string::npos)
          << key << v << ": " << e;
    }
  }
  // Positive in float64 but 0 in float32: a zero eps or lr the user did not ask for.
  e = Error(std::string(kMinimal) + "model: {eps: 1e-50}\n");
  EXPECT_NE(e.find("model.eps: value 1e-50 is out of range (must be in (0.0, 1.0]; it rounds to "
                   "0.0 in float32)"),
            std::string::npos)
      << e;
  auto r = Parse(std::string(kMinimal) + "model: {rope_theta: 3.0e+38}\noptim: {lr: 1e-30}\n");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(RunConfigTest, CudaDeviceDependsOnWhatTheCallerKnows) {
  const std::string yaml = std::string(kMinimal) + "train: {device: cuda}\n";
  RunConfigOptions cpu_build;
  cpu_build.cuda = RunConfigOptions::Cuda::kNo;
  const std::string e = Error(yaml, cpu_build);
  EXPECT_NE(e.find("cfg.yaml:3:17: train.device: value cuda needs a baton-train built with CUDA, "
                   "and this one was built without"),
            std::string::npos)
      << e;
  EXPECT_TRUE(Parse(std::string(kMinimal) + "train: {device: cpu}\n", cpu_build).ok());

  auto unknown = Parse(yaml);  // the orchestrator: accepted, with a warning naming the key
  ASSERT_TRUE(unknown.ok()) << unknown.status().ToString();
  ASSERT_EQ(unknown->warnings.size(), 1u);
  EXPECT_NE(unknown->warnings[0].find("cfg.yaml:3:17: train.device: value cuda needs a baton-train "
                                      "built with CUDA"),
            std::string::npos)
      << unknown->warnings[0];

  RunConfigOptions cuda_build;
  cuda_build.cuda = RunConfigOptions::Cuda::kYes;
  auto yes = Parse(yaml, cuda_build);
  ASSERT_TRUE(yes.ok());
  EXPECT_TRUE(yes->warnings.empty());
  EXPECT_TRUE(Parse(kMinimal)->warnings.empty());
}

}  // namespace
}  // namespace baton
