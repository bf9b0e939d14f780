// `baton-train plan-memory`: the bytes per rank a run will hold at its peak (weights, gradients,
// optimizer state, collective buffers, activations of the longest packed row with and without
// activation checkpointing, the runtime), as text or one JSON object. `baton submit` runs it to
// refuse a run that cannot fit (docs/trainer.md, "Memory plan").
//
// The calculation is trainer/memory/memory_plan.h; its inputs, the model sizes and the longest
// row, are plan_memory_inputs.h's; on CPU the runtime is libtorch's own resident memory,
// measured here by running one tiny training step in this process. The report is
// schema/memory_plan_report.h (--json) or plan_memory_text.h.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "schema/exit_codes.h"
#include "schema/memory_plan_report.h"
#include "trainer/fail.h"
#include "trainer/memory/checkpoint_bytes.h"
#include "trainer/memory/checkpoint_disk_bytes.h"
#include "trainer/memory/memory_plan.h"
#include "trainer/model/autocast.h"
#include "trainer/model/video_action_model.h"
#include "trainer/optim/adamw.h"
#include "trainer/tools/commands.h"
#include "trainer/tools/plan_memory_inputs.h"
#include "trainer/tools/plan_memory_text.h"
#include "trainer/train/train_step.h"

namespace baton {

namespace {

struct Args {
  std::string config;
  int64_t world = 0;
  bool json = false;
  PlanRowFlags row;  // --init-from, and the longest row without a dataset
  double runtime_mb = -1;
};

// Current resident set size from /proc/self/status (VmRSS), in bytes; 0 when unreadable.
int64_t ResidentBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream in(line.substr(6));
      int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

// libtorch's resident memory once it has run a training step: the code pages of the CPU kernels
// a forward, backward and AdamW step touch, the allocator's and thread pools' own state. Runs
// one step of a tiny model in `dtype` (bf16 under autocast) and reads VmRSS.
int64_t MeasureCpuRuntime(DType dtype, int64_t threads) {
  torch::set_num_threads(int(std::max<int64_t>(1, threads)));
  ModelDims d;
  d.channels = 2, d.patch = 2, d.action_dim = 2, d.action_steps = 2, d.text_dim = 8;
  d.dim = 12, d.heads = 2, d.layers = 1, d.ffn_dim = 16, d.freq_dim = 16;
  d.zero_init = false;
  const auto master = dtype == DType::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  VideoActionModel model(d);
  model->to(master);
  OptimSection optim;
  AdamW opt(TrainableParameters(model), optim);
  const PackedLayout layout = BuildPackedLayout(2, 2, 2, 2, {{2, 1, 4}});
  const LayoutTensors lt =
      MakeLayoutTensors(layout, d.head_dim(), d.rope_theta, torch::kCPU, master);
  auto o = torch::TensorOptions().dtype(master);
  ModelInputs in;
  in.video_noisy = torch::randn({1, 2, 2, 4, 4}, o);
  in.video_clean = torch::randn({1, 2, 2, 4, 4}, o);
  in.action_noisy = torch::randn({1, 2, 2, 2}, o);
  in.action_clean = torch::randn({1, 2, 2, 2}, o);
  in.t_video_noisy = torch::rand({1, 2}, o) * 1000;
  in.t_video_clean = torch::zeros({1, 2}, o);
  in.t_action_noisy = torch::rand({1, 2}, o) * 1000;
  in.text = torch::randn({1, 3, 8}, o);
  torch::Tensor loss;
  {
    AutocastBf16 autocast(dtype == DType::kBFloat16, /*cuda=*/false);
    ModelOutputs out = model->forward(in, layout, lt);
    loss =
        out.video.to(torch::kFloat32).pow(2).mean() + out.action.to(torch::kFloat32).pow(2).mean();
  }
  loss.backward();
  opt.ClipGradNorm(1.0);
  opt.Step(1e-3);
  return ResidentBytes();
}

// The CUDA context, cuBLAS workspaces and the caching allocator's slack are not in any tensor;
// a fixed allowance (docs/trainer.md).
constexpr int64_t kCudaRuntimeBytes = int64_t(1) << 30;

// The plan's settings from the run config; the runtime from --runtime-mb, else measured (CPU) or
// the CUDA allowance.
PlanSettings Settings(const RunConfig& config, int64_t world, double runtime_mb) {
  PlanSettings s;
  s.dtype = config.train.dtype;
  s.cuda = config.train.device == Device::kCuda;
  s.shard = config.optim.shard;
  s.checkpointing = config.train.activation_checkpointing;
  s.world = world;
  s.prefetch = config.data.prefetch;
  s.heap_factor = s.cuda ? 1.0 : kCpuHeapFactor;
  s.async_checkpoint = config.checkpoint.async;
  s.export_dtype = config.checkpoint.export_dtype;
  s.master = config.optim.master;
  if (runtime_mb >= 0) {
    // Up to 1 EB: enough for any machine, and the product stays an int64.
    if (!(runtime_mb <= 1e12)) {
      BATON_FAIL(
          kExitUsage,
          "plan-memory: --runtime-mb " + std::to_string(runtime_mb) + " is outside [0, 1e12]",
          "give the runtime allowance in MB");
    }
    s.runtime_bytes = int64_t(runtime_mb * 1e6);
  } else {
    s.runtime_bytes =
        s.cuda ? kCudaRuntimeBytes : MeasureCpuRuntime(s.dtype, config.slurm.cpus_per_task);
  }
  return s;
}

MemoryPlanReport MakeReport(const RunConfig& config, const std::string& config_path,
                            const PlanInputs& in, const PlanSettings& s, const MemoryPlan& p,
                            const CheckpointBytes& ckpt, const CheckpointDisk& disk) {
  MemoryPlanReport r;
  r.config = config_path;
  r.world_size = s.world;
  r.dtype = config.train.dtype;
  r.device = config.train.device;
  r.shard = config.optim.shard;
  r.master = config.optim.master;
  r.activation_checkpointing = config.train.activation_checkpointing;
  r.parameters = {p.parameters, p.trainable};
  const PlanRow& row = in.row;
  r.row = {in.row_source, row.batch,          row.padded_frames, row.tokens, row.valid_tokens,
           row.key_slots, row.computed_pairs, row.call_pairs,    row.chunk,  row.window};
  r.bytes = {p.weights,         p.master_share,        p.gradients,
             p.gradients_held,  p.optimizer,           p.collective_buffers,
             p.autocast_copies, p.activations_used,    p.heap_overhead,
             p.runtime,         p.checkpoint_snapshot, p.total};
  r.checkpoint_snapshot_in_total = !s.cuda;
  const ActivationBytes& a = p.activations;
  r.activations = {a.none,           a.blocks,           a.blocks_attention, a.per_block,
                   a.outside_blocks, a.inputs,           a.working,          a.per_block_attention,
                   a.attention_call, a.working_attention};
  r.heap_factor = s.heap_factor;
  // Per-rank figures only for worlds a reader would list; the largest share is what a save's
  // time follows.
  r.checkpoint = {ckpt.total,
                  ckpt.largest,
                  config.checkpoint.export_dtype,
                  s.world <= 64 ? ckpt.rank_bytes : std::vector<int64_t>{},
                  disk.bytes,
                  disk.files};
  r.total_by_checkpointing = {p.total_none, p.total_blocks, p.total_blocks_attention};
  const double limit_gb = s.cuda ? config.slurm.gpu_memory_gb : config.slurm.mem_per_task_gb;
  // The schema bounds both keys (docs/run_config.md), so the product is an int64.
  const int64_t limit = int64_t(limit_gb * double(int64_t(1) << 30));
  if (limit > 0) {
    r.limit = MemoryPlanReport::Limit{MemoryLimitKey(r.device), limit_gb, limit};
    r.fits = p.total <= limit;
  }
  return r;
}

// --world-size, else slurm.nodes x slurm.ntasks_per_node; each checked against the plan's
// limits (fails fast naming the flag or the keys).
int64_t WorldSize(const Args& a, const RunConfig& config) {
  if (a.world != 0) {
    CheckPlanSize(a.world, 1, PlanSizeLimits::kWorld, "--world-size", kExitUsage,
                  "give the number of data-parallel ranks");
  }
  int64_t world = a.world;
  if (world == 0 &&
      __builtin_mul_overflow(config.slurm.nodes, config.slurm.ntasks_per_node, &world)) {
    world = -1;
  }
  CheckPlanSize(world, 1, PlanSizeLimits::kWorld,
                a.config + ": slurm.nodes x slurm.ntasks_per_node", kExitConfig,
                "fewer nodes or tasks");
  return world;
}

int RunPlanMemory(const Args& a) {
  // The plan is for the machine that will run the config, not this one: a cuda run is
  // planned on a CPU-only login node too. With --frames the dataset need not exist.
  const PlanRowFlags& f = a.row;
  RunConfigOptions options;
  options.cuda = RunConfigOptions::Cuda::kUnknown;
  options.check_filesystem = f.frames <= 0;
  const RunConfig config = BATON_VALUE_OR_FAIL(LoadRunConfig(a.config, options), "fix the config");
  const int64_t world = WorldSize(a, config);
  if (f.frames > 0 && (f.height < 1 || f.width < 1 || f.action_steps < 1 || f.text_len < 1)) {
    std::cerr << "baton-train plan-memory: --frames needs --height, --width, "
                 "--action-steps and --text-len (each >= 1)\n";
    return kExitUsage;
  }
  const PlanInputs in = GatherPlanInputs(config, a.config, f);
  const PlanSettings s = Settings(config, world, a.runtime_mb);
  const MemoryPlan p = MakeMemoryPlan(in.model, in.row, s);
  // What one checkpoint makes each rank write: the stop save's size, which `baton submit`
  // weighs against the preemption grace.
  const CheckpointBytes ckpt = PlanCheckpointBytes(
      ModelParameters(in.model), world, p.master_bytes,
      config.checkpoint.export_dtype == ExportDType::kBf16 ? 2 : p.master_bytes);
  const StDType master = p.master_bytes == 8 ? StDType::kF64 : StDType::kF32;
  const CheckpointDisk disk = CheckpointDiskBytes(
      ModelParameters(in.model), world, master,
      config.checkpoint.export_dtype == ExportDType::kBf16 ? StDType::kBF16 : master,
      config.checkpoint.max_shard_bytes);
  if (p.overflow || ckpt.overflow || disk.overflow) {
    BATON_FAIL(f.frames > 0 ? kExitUsage : kExitConfig,
               "plan-memory: the plan's byte counts exceed 2^63 (the model of " +
                   std::to_string(p.parameters) + " parameters with a row of " +
                   std::to_string(in.row.tokens) + " tokens): no device holds this run",
               "shrink the model or the longest row");
  }
  const MemoryPlanReport report = MakeReport(config, a.config, in, s, p, ckpt, disk);
  if (a.json) {
    std::cout << report.ToJson().dump() << "\n";
  } else {
    PrintMemoryPlanText(report, in.model.dim, in.model.layers);
  }
  return kExitOk;
}

}  // namespace

void RegisterPlanMemory(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("plan-memory", "Bytes per rank a run will hold at its peak, by category");
  cmd->add_option("--config", a->config, "Run config (YAML)")->required();
  cmd->add_option("--world-size", a->world,
                  "Data-parallel ranks (default: slurm.nodes x slurm.ntasks_per_node)");
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->add_option("--init-from", a->row.init_from,
                  "Upstream transformer/ folder (or its parent) whose config.json gives the sizes "
                  "(overrides model.init_from; only config.json is read)");
  cmd->add_option("--frames", a->row.frames,
                  "Latent frames of the longest episode: plan without reading the dataset (then "
                  "--height, --width, --action-steps and --text-len are needed too)");
  cmd->add_option("--height", a->row.height, "Latent height H (with --frames)");
  cmd->add_option("--width", a->row.width, "Latent width W (with --frames)");
  cmd->add_option("--action-steps", a->row.action_steps,
                  "Action sub-steps per frame N (with --frames)");
  cmd->add_option("--text-len", a->row.text_len, "Text tokens per episode L (with --frames)");
  cmd->add_option("--channels", a->row.channels,
                  "Latent channels (with --frames and no config.json to give them)");
  cmd->add_option("--action-dim", a->row.action_dim, "Action channels (as --channels)");
  cmd->add_option("--text-dim", a->row.text_dim, "Text embedding size (as --channels)");
  cmd->add_option("--runtime-mb", a->runtime_mb,
                  "Runtime allowance in MB instead of the measured one (CPU) or 1 GiB (CUDA)");
  cmd->callback([=] { *selected = [=] { return RunPlanMemory(*a); }; });
}

}  // namespace baton
