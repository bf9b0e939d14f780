#include "trainer/train/segment_setup.h"

#include <cstdio>
#include <cstdlib>

#include "schema/exit_codes.h"
#include "trainer/build_options.h"
#include "trainer/data/episode_reader.h"
#include "trainer/fail.h"
#include "trainer/train/device_select.h"
#include "trainer/train/heartbeat.h"
#include "trainer/train/torch_dtype.h"

namespace baton {

DatasetShape ResolveShape(const DatasetIndex& index) {
  if (index.shape) return *index.shape;
  auto first = ReadEpisode(index, 0);
  if (!first.ok())
    FailAt(__FILE__, __LINE__, first.status(), "fix or remove the episode named above");
  return first->shape;
}

namespace {

// The held-out episodes, by their index in their own dataset (what the eval's draws key on).
void PrintEvalSet(const EvalSet& set, const EvalSection& eval) {
  std::string keys;
  for (size_t i = 0; i < set.eval_keys.size() && i < 64; ++i)
    keys += (i ? " " : "") + std::to_string(set.eval_keys[i]);
  if (set.eval_keys.size() > 64) keys += " ...";
  std::printf("eval: %zu held-out episode(s) of %s: %s\n", set.eval->episodes.size(),
              eval.data.empty() ? "data.path" : "eval.data", keys.c_str());
}

}  // namespace

Setup SetUp(const TrainOptions& opt, const TrainerEnvironment& environment, SegmentLog& log) {
  Setup s;
  s.environment = environment;
  // 1. Config.
  s.config = BATON_VALUE_OR_FAIL(LoadRunConfig(opt.config_path, TrainerConfigOptions()),
                                 "fix the config (baton validate shows every problem)");
  const RunConfig& config = s.config;
  s.run_dir = !opt.run_dir.empty() ? opt.run_dir : config.run.dir;
  if (s.run_dir.empty()) {
    BATON_FAIL(kExitConfig, opt.config_path + ": run.dir is empty and no --run-dir was given",
               "set run.dir or pass --run-dir");
  }
  log.SetPath(opt.events_path, s.run_dir, environment.JobOrLocal(), environment.restart_count);
  s.dtype = TorchDtype(config.train.dtype);
  const bool cuda = config.train.device == Device::kCuda;

  // 2. Ranks, and the CPU threads each may use (libtorch defaults to 1 here); the GPU of this
  // rank, before anything touches CUDA.
  s.env = DistEnvFromEnvironment();
  log.SetRank(s.env.rank);
  StartHeartbeat(s.run_dir, s.env.rank, environment.node_name);
  ApplyDeterminism(config.train.deterministic);
  s.device = SelectDevice(config.train.device, s.env.local_rank);
  torch::set_num_threads(CpuThreadsPerRank(s.env));
  s.group = ProcessGroupHandle::Create(s.env, cuda);

  // 3. Data.
  auto loaded = LoadDatasetIndex(config.data.path);
  if (!loaded.ok()) {
    FailAt(__FILE__, __LINE__, kExitData, loaded.status().ToString(),
           "check data.path in " + opt.config_path);
  }
  s.eval_set = BATON_VALUE_OR_FAIL(SplitEvalSet(loaded.value(), config.eval),
                                   "fix the eval: section of " + opt.config_path);
  s.index = s.eval_set.train;
  if (s.leader() && s.eval_set.enabled()) PrintEvalSet(s.eval_set, config.eval);
  s.shape = ResolveShape(*s.index);
  if (s.shape.height % config.model.patch_size != 0 ||
      s.shape.width % config.model.patch_size != 0) {
    BATON_FAIL(kExitConfig,
               "model.patch_size " + std::to_string(config.model.patch_size) +
                   " does not divide the latent size " + std::to_string(s.shape.height) + "x" +
                   std::to_string(s.shape.width) + " of " + config.data.path,
               "choose a patch size that divides H and W");
  }
  s.sampler.batch_size = config.data.batch_size;
  s.sampler.world_size = s.env.world_size;
  s.sampler.rank = s.env.rank;
  s.sampler.pool_factor = config.data.pool_factor;
  s.sampler.seed = uint64_t(config.run.seed);
  s.sampler.plan = config.data.plan;
  return s;
}

TrainerState RunIdentity(const Setup& s, const ModelDims& dims) {
  TrainerState st;
  st.world_size = s.env.world_size;
  st.sampler.batch_size = s.config.data.batch_size;
  st.sampler.plan = Name(s.config.data.plan);
  st.grad_accum = s.config.optim.grad_accum;
  st.seed = s.config.run.seed;
  st.config_hash = ConfigHash(dims);
  st.dtype = DTypeName(s.config.train.dtype);
  st.pad_multiple = s.config.data.pad_multiple;
  st.data_path = s.index->dir;
  st.dataset_fingerprint = s.index->fingerprint;
  return st;
}

}  // namespace baton
