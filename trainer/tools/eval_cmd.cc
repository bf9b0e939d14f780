// `baton-train eval --config CFG --checkpoint DIR [--json]`: one committed checkpoint's eval
// value (docs/eval.md, "The command"), on however many ranks the environment says, as the
// training job's inline eval computes it. DIR is <run>/checkpoints/checkpoint_step_<N>; the
// result goes to <run>/evals/step_<N>.json, and with --json the EvalEvent is printed as one
// JSON object. Exit 0; 65 when the checkpoint does not verify (naming the file) or an episode is
// bad; 78 for a config without eval:, a bad eval set or a folder that is not a checkpoint; 74
// when the result cannot be written. Nothing is written unless the value was computed.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "trainer/build_options.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/ckpt/upstream_config.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/distributed/failure_agreement.h"
#include "trainer/eval/eval_run.h"
#include "trainer/fail.h"
#include "trainer/tools/commands.h"
#include "trainer/train/device_select.h"
#include "trainer/train/run_model_dims.h"
#include "trainer/train/segment_setup.h"
#include "trainer/train/torch_dtype.h"
#include "trainer/train/trainer_environment.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

struct Args {
  std::string config, checkpoint;
  bool json = false;
};

// The checkpoint's step and its run folder, from DIR = <run>/checkpoints/checkpoint_step_<N>.
EvalTarget TargetOf(const std::string& dir) {
  const fs::path d = fs::absolute(dir).lexically_normal();
  const fs::path folder = d.filename().empty() ? d.parent_path() : d;
  EvalTarget t;
  t.step = CheckpointStepFromName(folder.filename().string());
  if (t.step < 0 || folder.parent_path().filename() != "checkpoints") {
    BATON_FAIL(kExitConfig, dir + ": not a run's checkpoint folder",
               "pass <run>/checkpoints/checkpoint_step_<N>");
  }
  t.checkpoint = folder.string();
  t.run = RunFolder{folder.parent_path().parent_path().string()};
  t.mode = EvalMode::kJob;
  return t;
}

// The model of the checkpoint's sizes (its transformer/config.json, checked against the config).
ModelDims CheckpointDims(const RunConfig& config, const DatasetShape& shape,
                         const std::string& checkpoint) {
  const std::string tdir = (fs::path(checkpoint) / "transformer").string();
  const ModelDims folder = ReadUpstreamDims(tdir);
  CheckTransformerWeights(tdir, folder);
  return ReconcileInitDims(folder, tdir, config.model, MakeModelDims(config, shape));
}

int RunEval(const Args& a) {
  const RunConfig config =
      BATON_VALUE_OR_FAIL(LoadRunConfig(a.config, TrainerConfigOptions()), "fix the config");
  if (!config.eval.enabled()) {
    BATON_FAIL(kExitConfig, a.config + ": the config has no eval: section (no held-out set)",
               "give eval.fraction (with eval.seed), eval.episodes or eval.data");
  }
  EvalTarget target = TargetOf(a.checkpoint);
  target.job_id = TrainerEnvironmentFromProcess().job_id;
  const DistEnv env = DistEnvFromEnvironment();
  ApplyDeterminism(config.train.deterministic);
  const torch::Device device = SelectDevice(config.train.device, env.local_rank);
  torch::set_num_threads(CpuThreadsPerRank(env));
  auto group = ProcessGroupHandle::Create(env, device.is_cuda());
  auto loaded = LoadDatasetIndex(config.data.path);
  if (!loaded.ok()) {
    FailAt(__FILE__, __LINE__, kExitData, loaded.status().ToString(),
           "check data.path in " + a.config);
  }
  const EvalSet set = BATON_VALUE_OR_FAIL(SplitEvalSet(loaded.value(), config.eval),
                                          "fix the eval: section of " + a.config);
  const DatasetShape shape = ResolveShape(*set.train);
  // Committed and whole (manifest, files, sizes) before anything is built; the hashes of every
  // file are checked as the load reads them.
  const Status whole = VerifyCheckpoint(target.checkpoint, /*check_hashes=*/false);
  if (!whole.ok()) {
    FailAt(__FILE__, __LINE__, kExitData, whole.ToString(),
           "evaluate another checkpoint (baton-train ckpt verify lists the valid ones)");
  }
  const ModelDims dims = CheckpointDims(config, shape, target.checkpoint);
  target.config_hash = ConfigHash(dims);
  const torch::Dtype dtype = TorchDtype(config.train.dtype);
  torch::manual_seed(uint64_t(config.run.seed));
  VideoActionModel model(dims);
  model->to(device, dtype == torch::kBFloat16 ? torch::kFloat32 : dtype);
  RunAgreed(*group, "while loading the checkpoint", [&] {
    LoadCheckpoint(target.checkpoint, model, nullptr, LoadMode::kWeightsOnly,
                   LoadShare{env.rank, env.world_size, CpuThreadsPerRank(env)});
    return std::string();
  });
  const EvalEvent e = EvaluateCheckpoint(model, config, set, shape, dtype, device, *group, target);
  RunAgreed(*group, "while writing the eval result", [&] {
    const Status st = WriteEvalFile(*group, target, e);
    if (!st.ok()) FailAt(__FILE__, __LINE__, st, "check the run folder's permissions and space");
    return std::string();
  });
  if (env.rank != 0) return kExitOk;
  if (a.json) {
    nlohmann::json j = e.ToJson();
    j["type"] = EvalEvent::kType;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "eval of step %lld: loss %.9g (video %.9g, action %.9g) over %lld episodes, %lld "
        "frames, %.2f s -> %s\n",
        (long long)target.step, e.loss, e.loss_video, e.loss_action, (long long)e.episodes,
        (long long)e.valid_frames, e.seconds, target.run.EvalFile(target.step).c_str());
  }
  return kExitOk;
}

}  // namespace

void RegisterEval(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Evaluate a committed checkpoint on the held-out set (writes evals/step_<N>.json)");
  cmd->add_option("--config", a->config, "Run config (YAML) with an eval: section")->required();
  cmd->add_option("--checkpoint", a->checkpoint,
                  "The checkpoint folder: <run>/checkpoints/checkpoint_step_<N>")
      ->required();
  cmd->add_flag("--json", a->json, "Print the eval event as one JSON object");
  cmd->callback([=] { *selected = [=] { return RunEval(*a); }; });
}

}  // namespace baton
