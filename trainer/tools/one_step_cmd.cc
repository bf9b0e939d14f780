// `baton-train one-step`: one optimizer step over an explicit list of episodes, on however many
// ranks the environment says, then rank 0 saves the updated weights and the reduced gradients.
// It is how tests show that batch x accum splits and 1 vs 2 ranks give the same update: the
// episodes are dealt as micro-batches of --batch-size, micro-batch i to rank i % world. With
// optim.shard only rank 0's own gradients are reduced (and with `gradients` only they are kept).
// --repeat turns it into the sharding bench's step (bench/sharding_bench.sh). train.dtype
// bfloat16 computes under autocast from float32 masters (optim.master sharded: bf16 copies), as
// training does; the file then holds each tensor in its own dtype.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/build_options.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/empty_text_tensor.h"
#include "trainer/data/pad_collate.h"
#include "trainer/distributed/process_group.h"
#include "trainer/fail.h"
#include "trainer/optim/adamw.h"
#include "trainer/tools/commands.h"
#include "trainer/train/device_select.h"
#include "trainer/train/torch_dtype.h"
#include "trainer/train/train_step.h"
#include "trainer/train/trainer_environment.h"

namespace baton {

namespace {
struct Args {
  std::string config, out;
  int64_t first = 0, count = 16, batch = 4, step = 0;
  int64_t repeat = 1;  // > 1: a benchmark of the step; every rank prints what it holds
  std::string device;  // empty: the config's train.device
};

// Bytes of every defined tensor in `ts`.
int64_t Bytes(const std::vector<torch::Tensor>& ts) {
  int64_t b = 0;
  for (const auto& t : ts) b += t.defined() ? int64_t(t.nbytes()) : 0;
  return b;
}

// The step's episodes, dealt as micro-batches of --batch-size (micro-batch i to rank i % world),
// and the step's global count of valid frames.
struct StepInput {
  std::vector<PaddedBatch> mine;  // this rank's micro-batches
  double frames = 0;
  DatasetShape shape;
  int64_t micro = 0;  // micro-batches over all ranks
};

StepInput ReadStepInput(const Args& a, const RunConfig& config, const DatasetIndex& index,
                        const DistEnv& env) {
  StepInput in;
  in.micro = a.count / a.batch;
  for (int64_t m = 0; m < in.micro; ++m) {
    std::vector<EpisodeData> eps;
    for (int64_t b = 0; b < a.batch; ++b) {
      eps.push_back(BATON_VALUE_OR_FAIL(ReadEpisode(index, a.first + m * a.batch + b),
                                        "regenerate or remove the episode named above"));
      in.frames += double(eps.back().frames);
      in.shape = eps.back().shape;
    }
    if (m % env.world_size == env.rank)
      in.mine.push_back(PadCollate(eps, config.data.pad_multiple));
  }
  return in;
}

// --repeat: one line per rank, in rank order (each rank prints after the ones before it), of the
// bytes it holds, the median step time and the collectives per step.
void PrintWhatEachRankHolds(const Args& a, const RunConfig& config, torch::Dtype dtype,
                            VideoActionModel& model, const AdamW& opt, ProcessGroupHandle& group,
                            const DistEnv& env, std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  std::vector<torch::Tensor> weights, masters, grads, moments;
  for (const auto& p : model->parameters()) weights.push_back(p);
  for (const auto& s : opt.state()) {
    masters.push_back(s.master);  // split parameters' float32 masters, owned only
    grads.push_back(s.grad());
    moments.push_back(s.exp_avg);
    moments.push_back(s.exp_avg_sq);
  }
  // A replicated bf16 run's autocast cache: the bf16 cast of every matmul parameter, held from
  // the forward through the backward.
  int64_t casts = 0;
  if (dtype == torch::kBFloat16 && !opt.any_split()) {
    const std::vector<bool> matmul = MatmulParameters(model, opt);
    for (size_t i = 0; i < matmul.size(); ++i) {
      if (matmul[i]) casts += 2 * opt.state()[i].param.numel();
    }
  }
  const double n = double(a.repeat);
  for (int64_t r = 0; r < env.world_size; ++r) {
    if (r == env.rank) {
      std::printf(
          "rank %lld/%lld shard %s master %s dtype %s: weights %lld B, masters %lld B, cast "
          "copies %lld B, gradients held %lld B, optimizer state %lld B, step %.4f s (median "
          "of %lld); per step: "
          "all-reduce %.0f call(s) %.0f B, reduce-scatter %.0f call(s) %.0f B, all-gather "
          "%.0f call(s) %.0f B; split parameters %lld, bf16 gradients alive at once %lld\n",
          (long long)env.rank, (long long)env.world_size, Name(config.optim.shard),
          Name(config.optim.master), DTypeName(config.train.dtype), (long long)Bytes(weights),
          (long long)Bytes(masters), (long long)casts, (long long)Bytes(grads),
          (long long)Bytes(moments), seconds[seconds.size() / 2], (long long)a.repeat,
          group.allreduce().calls / n, group.allreduce().bytes / n,
          group.reduce_scatter().calls / n, group.reduce_scatter().bytes / n,
          group.allgather().calls / n, group.allgather().bytes / n, (long long)opt.split_count(),
          (long long)opt.peak_compute_grads());
      std::fflush(stdout);
    }
    group.Barrier();
  }
}

// Rank 0: the updated weights (a split parameter's float32 master) and the reduced gradients to
// --out, and the step's line.
void SaveStep(const Args& a, const AdamW& opt, const ProcessGroupHandle& group, const StepStats& st,
              int64_t micro, const DistEnv& env) {
  std::vector<torch::Tensor> keep;
  std::vector<StTensorRef> refs;
  for (const auto& s : opt.state()) {
    const torch::Tensor w = s.split && s.master.defined() ? s.master : s.param.detach();
    for (const auto& [prefix, t] : {std::make_pair(std::string("weight."), w),
                                    std::make_pair(std::string("grad."), s.grad())}) {
      if (!t.defined()) continue;  // optim.shard gradients: not this rank's part
      keep.push_back(t.to(torch::kCPU).contiguous());
      refs.push_back({prefix + s.name, ToStDType(keep.back().scalar_type()),
                      keep.back().sizes().vec(), keep.back().data_ptr()});
    }
  }
  BATON_CHECK_OK(WriteSafetensors(a.out, refs), "check the --out folder");
  std::printf(
      "one step over %lld episodes (%lld micro-batches of %lld on %lld rank(s)): loss %.15g, "
      "grad norm %.15g, %lld all-reduce call(s), %lld bytes, step %.3f s\n",
      (long long)a.count, (long long)micro, (long long)a.batch, (long long)env.world_size, st.loss,
      st.grad_norm, (long long)group.allreduce_calls(), (long long)group.allreduce_bytes(),
      st.seconds);
}

int RunOneStep(const Args& a) {
  RunConfig config =
      BATON_VALUE_OR_FAIL(LoadRunConfig(a.config, TrainerConfigOptions()), "fix the config");
  const DistEnv env = DistEnvFromEnvironment();
  const TrainerEnvironment environment = TrainerEnvironmentFromProcess();
  if (a.batch < 1 || a.count < 1 || a.count % (a.batch * env.world_size) != 0) {
    std::fprintf(stderr,
                 "baton-train one-step: --count must be a multiple of --batch-size x world size\n");
    return kExitUsage;
  }
  ApplyDeterminism(config.train.deterministic);
  const torch::Device device = SelectDevice(
      a.device.empty() ? config.train.device : Parse<Device>(a.device).value(), env.local_rank);
  auto group = ProcessGroupHandle::Create(env, device.is_cuda());
  auto loaded = LoadDatasetIndex(config.data.path);
  if (!loaded.ok())
    FailAt(__FILE__, __LINE__, kExitData, loaded.status().ToString(),
           "check data.path in the config");
  const DatasetIndex index = std::move(loaded).value();
  if (a.first < 0 || a.first + a.count > int64_t(index.episodes.size())) {
    std::fprintf(stderr,
                 "baton-train one-step: episodes %lld..%lld are outside the dataset of %zu\n",
                 (long long)a.first, (long long)(a.first + a.count - 1), index.episodes.size());
    return kExitUsage;
  }
  const torch::Dtype dtype = TorchDtype(config.train.dtype);
  const StepInput in = ReadStepInput(a, config, index, env);
  torch::manual_seed(uint64_t(config.run.seed));
  ModelDims dims = MakeModelDims(config, in.shape);
  dims.zero_init = false;
  VideoActionModel model(dims);  // initialised on the CPU: the same weights on any device
  model->to(device, dtype == torch::kBFloat16 ? torch::kFloat32 : dtype);
  const auto named = TrainableParameters(model);
  AdamW opt(named, config.optim);
  const torch::Tensor empty_text =
      EmptyTextTensor(config.objective.text_dropout, index.dir, in.shape);
  const auto shard_plan = ShardOptimizer(config, env.rank, env.world_size, opt);
  SplitComputeCopies(config, dtype, model, opt, environment.widen_after_backward);
  TrainStepper stepper(model, &opt, group.get(), config, in.shape, dtype, device, empty_text,
                       shard_plan.get(), environment.stepper);
  StepStats st;
  std::vector<double> seconds;
  for (int64_t k = 0; k < a.repeat; ++k) {
    st = stepper.Step(in.mine, a.step, in.frames, config.optim.lr, false);
    seconds.push_back(st.seconds);
  }
  if (a.repeat > 1) PrintWhatEachRankHolds(a, config, dtype, model, opt, *group, env, seconds);
  if (env.rank == 0) SaveStep(a, opt, *group, st, in.micro, env);
  return kExitOk;
}

}  // namespace

void RegisterOneStep(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("one-step", "One optimizer step over explicit episodes; save the result");
  cmd->add_option("--config", a->config, "Run config (YAML); train.dtype float64 for exact checks")
      ->required();
  cmd->add_option("--first", a->first, "First episode index")->capture_default_str();
  cmd->add_option("--count", a->count, "Episodes in the step")->capture_default_str();
  cmd->add_option("--batch-size", a->batch, "Episodes per micro-batch")->capture_default_str();
  cmd->add_option("--step", a->step, "Step index (keys the per-episode draws)")
      ->capture_default_str();
  cmd->add_option("--out", a->out, "Safetensors file for weights and gradients (rank 0)")
      ->required();
  cmd->add_option("--device", a->device,
                  "cpu | cuda (default: the config's train.device); the same initial weights and "
                  "draws either way, so a GPU step can be compared with a CPU one")
      ->check(CLI::IsMember(Words<Device>()));
  cmd->add_option("--repeat", a->repeat,
                  "Run the step this many times and print, per rank, the bytes it holds, the "
                  "median step time and the collectives per step (a benchmark)")
      ->check(CLI::PositiveNumber);
  cmd->callback([=] { *selected = [=] { return RunOneStep(*a); }; });
}

}  // namespace baton
