#include "schema/run_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "schema/atomic_file.h"
#include "tests/common/temp_dir.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

class RunConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(tmp_ / "data"); }
  // Parses `yaml` as if read from <tmp>/cfg.yaml (so data: data resolves to <tmp>/data).
  Result<RunConfig> Parse(const std::string& yaml, const RunConfigOptions& options = {}) {
    return ParseRunConfig(yaml, tmp_ / "cfg.yaml", options);
  }
  std::string Error(const std::string& yaml, const RunConfigOptions& options = {}) {
    auto r = Parse(yaml, options);
    EXPECT_FALSE(r.ok()) << "expected an error for:\n" << yaml;
    if (r.ok()) return "";
    EXPECT_EQ(r.status().code(), Code::kConfig);
    EXPECT_EQ(r.status().exit_code(), 78);
    return r.status().message();
  }
  static constexpr const char* kMinimal = "run: {steps: 10}\ndata: {path: data}\n";
  test::TempDir tmp_;
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

TEST_F(RunConfigTest, MalformedYamlNamesFileAndLine) {
  const std::string e = Error("run: {steps: 10\ndata: [\n");
  EXPECT_NE(e.find("cfg.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed YAML"), std::string::npos) << e;
  EXPECT_NE(Error("").find("got an empty file"), std::string::npos);
  EXPECT_NE(Error("- 1\n- 2\n").find("expected a mapping with sections"), std::string::npos);
}

TEST_F(RunConfigTest, RepeatedKeysAndSectionsNameBothPlaces) {
  // A repeated section: YAML readers keep one of the two silently.
  std::string e = Error("run: {steps: 10}\ndata: {path: data}\nrun:\n  steps: 20\n");
  EXPECT_NE(
      e.find("cfg.yaml:3:1: run: repeated section, first given at " + (tmp_ / "cfg.yaml") + ":1:1"),
      std::string::npos)
      << e;
  // A repeated key, block style; the same value twice is still refused.
  e = Error("run:\n  steps: 10\n  seed: 1\n  steps: 10\ndata: {path: data}\n");
  EXPECT_NE(e.find("cfg.yaml:4:3: run.steps: repeated key, first given at " + (tmp_ / "cfg.yaml") +
                   ":2:3"),
            std::string::npos)
      << e;
  // Flow style, and a quoted spelling of the same key.
  e = Error("run: {steps: 10}\ndata: {path: data, \"batch_size\": 2, batch_size: 3}\n");
  EXPECT_NE(e.find("cfg.yaml:2:37: data.batch_size: repeated key, first given at " +
                   (tmp_ / "cfg.yaml") + ":2:20"),
            std::string::npos)
      << e;
  // At any depth, inside lists too.
  e = Error(std::string(kMinimal) + "optim: {betas: [{a: 1, a: 2}, 0.9]}\n");
  EXPECT_NE(e.find("cfg.yaml:3:24: optim.betas[0].a: repeated key"), std::string::npos) << e;
  // A key repeated in different sections is fine (the existing suite has eps twice).
  EXPECT_TRUE(Parse(std::string(kMinimal) + "model: {eps: 1.0e-6}\noptim: {eps: 1.0e-8}\n").ok());
}

TEST_F(RunConfigTest, SecondDocumentIsRefusedNamingItsLine) {
  std::string e = Error(std::string(kMinimal) + "---\nrun: {steps: 5}\n");
  EXPECT_NE(e.find("cfg.yaml:3:1: a second YAML document starts here"), std::string::npos) << e;
  // Even an empty one: a stray '---' means the file is not what its author thinks.
  e = Error(std::string(kMinimal) + "---\n");
  EXPECT_NE(e.find("cfg.yaml:3:1: a second YAML document starts here"), std::string::npos) << e;
  // An explicit start of the one document, and an explicit end, are fine.
  EXPECT_TRUE(Parse("---\n" + std::string(kMinimal) + "...\n").ok());
}

TEST_F(RunConfigTest, StrTaggedNumbersAreStrings) {
  std::string e = Error("run: {steps: !!str 10}\ndata: {path: data}\n");
  EXPECT_NE(e.find("run.steps: expected an integer, got '10' (quoted or tagged !!str, so a string"),
            std::string::npos)
      << e;
  e = Error(std::string(kMinimal) + "optim: {lr: !!str 1.0e-3, weight_decay: '0.1'}\n");
  EXPECT_NE(e.find("optim.lr: expected a finite number, got '1.0e-3' (quoted or tagged !!str"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("optim.weight_decay: expected a finite number, got '0.1' (quoted"),
            std::string::npos)
      << e;
  e = Error(std::string(kMinimal) + "optim: {betas: [!!str 0.9, 0.95]}\n");
  EXPECT_NE(e.find("optim.betas: expected a list of two numbers"), std::string::npos) << e;
  // An explicit number tag is a number.
  auto r = Parse("run: {steps: !!int 10}\ndata: {path: data}\noptim: {lr: !!float 2.0e-3}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->run.steps, 10);
  EXPECT_DOUBLE_EQ(r->optim.lr, 2e-3);
  EXPECT_NE(Error("run: {steps: !!float 10}\ndata: {path: data}\n")
                .find("run.steps: expected an integer"),
            std::string::npos);
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

TEST_F(RunConfigTest, ErrorListIsCappedWithACount) {
  std::string yaml = std::string(kMinimal) + "optim:\n";
  for (int i = 0; i < 35; ++i) yaml += "  unknown_" + std::to_string(i) + ": 1\n";
  const std::string e = Error(yaml);
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), static_cast<long>(kMaxRunConfigErrors)) << e;
  EXPECT_NE(e.find("optim.unknown_0: unknown key"), std::string::npos) << e;
  EXPECT_EQ(e.find("optim.unknown_20: unknown key"), std::string::npos) << e;
  EXPECT_NE(e.find("\n... and 15 more"), std::string::npos) << e;
  EXPECT_EQ(e.substr(e.rfind('\n') + 1), "... and 15 more");
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

TEST_F(RunConfigTest, BatchSizeLargerThanTheDataset) {
  fs::create_directories(tmp_ / "data/meta");
  const std::string index = tmp_ / "data/meta/episodes.jsonl";
  // Three episodes; blank lines do not count, as in the trainer's index reader.
  std::ofstream(index) << "{\"id\": 1}\n\n{\"id\": 2}\n  \n{\"id\": 3}";
  std::string e = Error("run: {steps: 10}\ndata: {path: data, batch_size: 4}\n");
  EXPECT_NE(e.find("cfg.yaml:2:32: data.batch_size: value 4 exceeds the dataset's 3 episodes (" +
                   index + ")"),
            std::string::npos)
      << e;
  e = Error(kMinimal);  // the default batch size (4) is checked too
  EXPECT_NE(e.find("data.batch_size: value 4 (the default) exceeds the dataset's 3 episodes"),
            std::string::npos)
      << e;
  EXPECT_TRUE(Parse("run: {steps: 10}\ndata: {path: data, batch_size: 3}\n").ok());
  // A bad batch_size is reported once, as such.
  e = Error("run: {steps: 10}\ndata: {path: data, batch_size: 0}\n");
  EXPECT_EQ(e.find("episodes"), std::string::npos) << e;

  // An index that is not a regular file is named, and never read (a FIFO would block).
  fs::remove(index);
  ASSERT_EQ(::mkfifo(index.c_str(), 0600), 0);
  auto pending = std::async(std::launch::async, [&] { return Error(kMinimal); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::ofstream unblock(index);  // lets the blocked reader finish before failing
    FAIL() << "validation blocked on a FIFO index";
  }
  e = pending.get();
  EXPECT_NE(e.find("data.path: " + index + " is a FIFO, not a regular file"), std::string::npos)
      << e;
}

TEST_F(RunConfigTest, ConfigThatIsNotARegularFileIsRefusedWithoutReadingIt) {
  const std::string dir = tmp_ / "cfg.d";
  fs::create_directories(dir);
  auto r = LoadRunConfig(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 78);
  EXPECT_NE(r.status().message().find(dir + ": cannot read the config file: it is a folder, not a "
                                            "regular file"),
            std::string::npos)
      << r.status().message();

  const std::string fifo = tmp_ / "cfg.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto pending = std::async(std::launch::async, [&] { return LoadRunConfig(fifo); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::ofstream unblock(fifo);
    FAIL() << "LoadRunConfig blocked on a FIFO";
  }
  r = pending.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 78);
  EXPECT_NE(r.status().message().find(fifo + ": cannot read the config file: it is a FIFO"),
            std::string::npos)
      << r.status().message();

  r = LoadRunConfig("/dev/zero");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/dev/zero: cannot read the config file: it is a character "
                                      "device"),
            std::string::npos)
      << r.status().message();
}

TEST_F(RunConfigTest, HugeConfigIsRefusedBeforeParsing) {
  const std::string path = tmp_ / "cfg.yaml";
  // Exactly at the limit: a valid config padded with a comment is read.
  std::string text = kMinimal;
  text += "#" + std::string(kMaxRunConfigBytes - text.size() - 2, 'x') + "\n";
  ASSERT_EQ(text.size(), static_cast<size_t>(kMaxRunConfigBytes));
  std::ofstream(path, std::ios::binary) << text;
  auto r = LoadRunConfig(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  // One byte more is refused, naming the file and the size.
  std::ofstream(path, std::ios::binary | std::ios::app) << "\n";
  r = LoadRunConfig(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 78);
  EXPECT_NE(r.status().message().find(path + ": the config file is 1048577 bytes, more than a run "
                                             "config's limit of 1048576 bytes"),
            std::string::npos)
      << r.status().message();
  // Text handed over directly is held to the same limit.
  auto parsed = ParseRunConfig(std::string(kMaxRunConfigBytes + 1, '#'), "big.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("big.yaml: 1048577 bytes is too large"),
            std::string::npos);
}

TEST_F(RunConfigTest, MissingFile) {
  auto r = LoadRunConfig(tmp_ / "absent.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 78);
  EXPECT_NE(r.status().message().find("absent.yaml: cannot read"), std::string::npos);
}

}  // namespace
}  // namespace baton
