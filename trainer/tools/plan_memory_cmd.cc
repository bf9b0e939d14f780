// `baton-train plan-memory`: the bytes per rank a run will hold at its peak (weights, gradients,
// optimizer state, collective buffers, activations of the longest packed row with and without
// activation checkpointing, the runtime), as text or one JSON object. `baton submit` runs it to
// refuse a run that cannot fit (docs/trainer.md, "Memory plan").
//
// The calculation is trainer/memory/memory_plan.h; this command gathers its inputs: the model
// sizes (model: keys, or model.init_from's config.json), the longest row (the dataset's longest
// episode at data.batch_size and data.pad_multiple, or --frames/--height/--width/... without a
// dataset), and on CPU libtorch's own resident memory, measured by running one tiny training
// step in this process.
//
// Every size is range-checked against PlanSizeLimits before the plan runs, naming its source: a
// flag (64), config.json of model.init_from or the dataset (65); the run config's own keys are
// bounded by its schema (78). The dataset's longest episode is read once, so a lying n_video is
// caught by its file (65) instead of planning a row that is not there.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "schema/exit_codes.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/episode_reader.h"
#include "trainer/data/length_bucket_sampler.h"
#include "trainer/fail.h"
#include "trainer/memory/checkpoint_bytes.h"
#include "trainer/memory/memory_plan.h"
#include "trainer/model/autocast.h"
#include "trainer/model/video_action_model.h"
#include "trainer/optim/adamw.h"
#include "trainer/tools/commands.h"
#include "trainer/train/train_step.h"

namespace baton {

namespace {

struct Args {
  std::string config, init_from;
  int64_t world = 0;
  bool json = false;
  // The longest row without a dataset.
  int64_t frames = 0, height = 0, width = 0, action_steps = 0, text_len = 0;
  int64_t channels = 0, action_dim = 0, text_dim = 0;
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
int64_t MeasureCpuRuntime(const std::string& dtype, int64_t threads) {
  torch::set_num_threads(int(std::max<int64_t>(1, threads)));
  ModelDims d;
  d.channels = 2, d.patch = 2, d.action_dim = 2, d.action_steps = 2, d.text_dim = 8;
  d.dim = 12, d.heads = 2, d.layers = 1, d.ffn_dim = 16, d.freq_dim = 16;
  d.zero_init = false;
  const auto master = dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
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
    AutocastBf16 autocast(dtype == "bfloat16", /*cuda=*/false);
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

// Fails with `exit_code` naming `what` (a flag, or a file and its key) when `v` is outside
// [lo, hi].
void CheckSize(int64_t v, int64_t lo, int64_t hi, const std::string& what, int exit_code,
               const std::string& hint) {
  if (v >= lo && v <= hi) return;
  FailAt(__FILE__, __LINE__, exit_code,
         "plan-memory: " + what + " is " + std::to_string(v) + ", outside [" + std::to_string(lo) +
             ", " + std::to_string(hi) + "]",
         hint);
}

// The dataset's (or the flags') per-episode sizes.
void CheckShape(const DatasetShape& shape, const std::string& source, bool flags, int exit_code) {
  using L = PlanSizeLimits;
  const std::string hint = flags ? "fix the flag" : "fix " + source + " (or re-import it)";
  auto name = [&](const char* flag, const char* key) {
    return flags ? std::string(flag) : source + ": " + key;
  };
  CheckSize(shape.height, 1, L::kPixels, name("--height", "latent height"), exit_code, hint);
  CheckSize(shape.width, 1, L::kPixels, name("--width", "latent width"), exit_code, hint);
  CheckSize(shape.action_steps, 1, L::kActionSteps, name("--action-steps", "action_steps"),
            exit_code, hint);
  CheckSize(shape.text_len, 1, L::kTextLen, name("--text-len", "text_len"), exit_code, hint);
  // 0: not known yet (no dataset; config.json gives them).
  CheckSize(shape.channels, 0, L::kChannels, name("--channels", "channels"), exit_code, hint);
  CheckSize(shape.action_dim, 0, L::kChannels, name("--action-dim", "action_dim"), exit_code, hint);
  CheckSize(shape.text_dim, 0, L::kChannels, name("--text-dim", "text_dim"), exit_code, hint);
}

// model.init_from's config.json (65: it is a file of the upstream folder, not the run config).
void CheckUpstreamDims(const ModelDims& d, const std::string& dir) {
  using L = PlanSizeLimits;
  const std::string file = dir + "/config.json: ";
  const std::string hint = "fix " + dir + "/config.json, or point model.init_from elsewhere";
  CheckSize(d.heads, 1, L::kHeads, file + "num_attention_heads", kExitData, hint);
  CheckSize(d.dim, 1, L::kDim, file + "num_attention_heads x attention_head_dim", kExitData, hint);
  CheckSize(d.layers, 1, L::kLayers, file + "num_layers", kExitData, hint);
  CheckSize(d.ffn_dim, 1, L::kFfnDim, file + "ffn_dim", kExitData, hint);
  CheckSize(d.freq_dim, 1, L::kFreqDim, file + "freq_dim", kExitData, hint);
  CheckSize(d.patch, 1, L::kPatch, file + "patch_size", kExitData, hint);
  CheckSize(d.channels, 1, L::kChannels, file + "in_channels", kExitData, hint);
  CheckSize(d.action_dim, 1, L::kChannels, file + "action_dim", kExitData, hint);
  CheckSize(d.text_dim, 1, L::kChannels, file + "text_dim", kExitData, hint);
}

std::string Gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(int64_t(1) << 30));
  return buf;
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
  cmd->add_option("--init-from", a->init_from,
                  "Upstream transformer/ folder (or its parent) whose config.json gives the sizes "
                  "(overrides model.init_from; only config.json is read)");
  cmd->add_option("--frames", a->frames,
                  "Latent frames of the longest episode: plan without reading the dataset (then "
                  "--height, --width, --action-steps and --text-len are needed too)");
  cmd->add_option("--height", a->height, "Latent height H (with --frames)");
  cmd->add_option("--width", a->width, "Latent width W (with --frames)");
  cmd->add_option("--action-steps", a->action_steps,
                  "Action sub-steps per frame N (with --frames)");
  cmd->add_option("--text-len", a->text_len, "Text tokens per episode L (with --frames)");
  cmd->add_option("--channels", a->channels,
                  "Latent channels (with --frames and no config.json to give them)");
  cmd->add_option("--action-dim", a->action_dim, "Action channels (as --channels)");
  cmd->add_option("--text-dim", a->text_dim, "Text embedding size (as --channels)");
  cmd->add_option("--runtime-mb", a->runtime_mb,
                  "Runtime allowance in MB instead of the measured one (CPU) or 1 GiB (CUDA)");
  cmd->callback([=] {
    *selected = [=]() -> int {
      // The plan is for the machine that will run the config, not this one: a cuda run is
      // planned on a CPU-only login node too. With --frames the dataset need not exist.
      RunConfigOptions options;
      options.cuda = RunConfigOptions::Cuda::kUnknown;
      options.check_filesystem = a->frames <= 0;
      const RunConfig config =
          BATON_VALUE_OR_FAIL(LoadRunConfig(a->config, options), "fix the config");
      if (a->world != 0) {
        CheckSize(a->world, 1, PlanSizeLimits::kWorld, "--world-size", kExitUsage,
                  "give the number of data-parallel ranks");
      }
      int64_t world = a->world;
      if (world == 0 &&
          __builtin_mul_overflow(config.slurm.nodes, config.slurm.ntasks_per_node, &world)) {
        world = -1;
      }
      CheckSize(world, 1, PlanSizeLimits::kWorld,
                a->config + ": slurm.nodes x slurm.ntasks_per_node", kExitConfig,
                "fewer nodes or tasks");
      const std::string dtype = DTypeName(config.train.dtype);
      const bool cuda = config.train.device == "cuda";

      // The data's sizes and the longest episode.
      DatasetShape shape;
      int64_t longest = 0;
      std::string row_source;
      if (a->frames > 0) {
        if (a->height < 1 || a->width < 1 || a->action_steps < 1 || a->text_len < 1) {
          std::cerr << "baton-train plan-memory: --frames needs --height, --width, "
                       "--action-steps and --text-len (each >= 1)\n";
          return kExitUsage;
        }
        shape.height = a->height, shape.width = a->width;
        shape.action_steps = a->action_steps, shape.text_len = a->text_len;
        shape.channels = a->channels, shape.action_dim = a->action_dim;
        shape.text_dim = a->text_dim;
        CheckSize(a->frames, 1, PlanSizeLimits::kFrames, "--frames", kExitUsage, "fix the flag");
        CheckShape(shape, "", /*flags=*/true, kExitUsage);
        longest = a->frames;
        row_source = "--frames";
      } else {
        auto loaded = LoadDatasetIndex(config.data.path);
        if (!loaded.ok()) {
          FailAt(__FILE__, __LINE__, kExitData, loaded.status().ToString(),
                 "check data.path in " + a->config + ", or state the row with --frames");
        }
        const DatasetIndex index = std::move(loaded).value();
        if (index.shape) {
          shape = *index.shape;
        } else {
          auto first = ReadEpisode(index, 0);
          if (!first.ok())
            FailAt(__FILE__, __LINE__, first.status(), "fix the episode named above");
          shape = first->shape;
        }
        CheckShape(shape, config.data.path, /*flags=*/false, kExitData);
        int64_t longest_episode = 0;
        for (size_t i = 0; i < index.episodes.size(); ++i) {
          if (index.episodes[i].frames > longest) {
            longest = index.episodes[i].frames;
            longest_episode = int64_t(i);
          }
        }
        // The row is planned from the longest episode's n_video: its file must agree (a lying
        // n_video would plan a row that is not there, and could be any size).
        CheckSize(longest, 1, PlanSizeLimits::kFrames,
                  config.data.path + ": latent frames of episode '" +
                      index.episodes[size_t(longest_episode)].id + "' (from its n_video)",
                  kExitData, "fix n_video in meta/episodes.jsonl");
        auto episode = ReadEpisode(index, longest_episode);
        if (!episode.ok()) {
          FailAt(__FILE__, __LINE__, episode.status(),
                 "the memory plan reads the longest episode; fix it or its n_video");
        }
        row_source = config.data.path;
      }

      // The model's sizes: the config's model: keys, or the folder's config.json.
      ModelDims dims = MakeModelDims(config, shape);
      const std::string init_from = !a->init_from.empty() ? a->init_from : config.model.init_from;
      if (!init_from.empty()) {
        const std::string dir = FindTransformerDir(init_from);
        ModelDims init = ReadUpstreamDims(dir);
        CheckUpstreamDims(init, dir);
        // Without a dataset the folder's sizes stand in for the data's.
        if (shape.channels == 0) dims.channels = shape.channels = init.channels;
        if (shape.action_dim == 0) dims.action_dim = shape.action_dim = init.action_dim;
        if (shape.text_dim == 0) dims.text_dim = shape.text_dim = init.text_dim;
        dims = ReconcileInitDims(init, dir, config.model, dims);
      }
      if (dims.channels < 1 || dims.action_dim < 1 || dims.text_dim < 1) {
        BATON_FAIL(kExitConfig,
                   "plan-memory: latent channels, action and text sizes are unknown without a "
                   "dataset",
                   "give --channels, --action-dim and --text-dim, or --init-from a folder");
      }
      if (shape.height % dims.patch != 0 || shape.width % dims.patch != 0) {
        BATON_FAIL(kExitConfig,
                   "model.patch_size " + std::to_string(dims.patch) +
                       " does not divide the latent size " + std::to_string(shape.height) + "x" +
                       std::to_string(shape.width),
                   "choose a patch size that divides H and W");
      }

      PlanModel m;
      m.channels = dims.channels, m.patch = dims.patch, m.action_dim = dims.action_dim;
      m.text_dim = dims.text_dim, m.dim = dims.dim, m.heads = dims.heads, m.layers = dims.layers;
      m.ffn_dim = dims.ffn_dim, m.freq_dim = dims.freq_dim;

      // The longest row: batch_size episodes (the sampler fills every batch), padded to the
      // longest episode's round_up(F, pad_multiple); as a bound, every episode that long.
      PlanRow row;
      row.batch = config.data.batch_size;
      row.padded_frames = RoundUp(longest, config.data.pad_multiple);
      row.height = shape.height, row.width = shape.width;
      row.action_steps = shape.action_steps, row.text_len = shape.text_len;
      const Status planned =
          PlanRowAttention(&row, std::vector<int64_t>(size_t(row.batch), longest), dims.patch,
                           dims.head_dim(), config.objective.chunk_min, config.objective.chunk_max,
                           config.objective.window_max, dims.heads);
      if (!planned.ok()) {
        // The row comes from the flags, or from the dataset's longest episode and the run
        // config's data.batch_size and objective: chunk and window.
        const bool flags = a->frames > 0;
        FailAt(__FILE__, __LINE__, flags ? kExitUsage : kExitConfig,
               "plan-memory: " + planned.message() + " (from " +
                   (flags ? std::string("--frames, --height, --width, --action-steps")
                          : config.data.path + " and " + a->config +
                                ": data.batch_size, objective.chunk_min/chunk_max/window_max") +
                   ")",
               flags ? "give the sizes of a row that can be trained"
                     : "lower data.batch_size or objective.window_max, or check the dataset's "
                       "longest episode");
      }

      PlanSettings s;
      s.dtype = dtype;
      s.cuda = cuda;
      s.shard = config.optim.shard;
      s.checkpointing = config.train.activation_checkpointing;
      s.world = world;
      s.prefetch = config.data.prefetch;
      s.heap_factor = cuda ? 1.0 : kCpuHeapFactor;
      s.async_checkpoint = config.checkpoint.async;
      s.export_dtype = config.checkpoint.export_dtype;
      s.master_sharded = config.optim.master == OptimMaster::kSharded;
      if (a->runtime_mb >= 0) {
        // Up to 1 EB: enough for any machine, and the product stays an int64.
        if (!(a->runtime_mb <= 1e12)) {
          BATON_FAIL(kExitUsage,
                     "plan-memory: --runtime-mb " + std::to_string(a->runtime_mb) +
                         " is outside [0, 1e12]",
                     "give the runtime allowance in MB");
        }
        s.runtime_bytes = int64_t(a->runtime_mb * 1e6);
      } else {
        s.runtime_bytes =
            cuda ? kCudaRuntimeBytes : MeasureCpuRuntime(dtype, config.slurm.cpus_per_task);
      }
      const MemoryPlan p = MakeMemoryPlan(m, row, s);
      // What one checkpoint makes each rank write: the stop save's size, which `baton submit`
      // weighs against the preemption grace.
      const CheckpointBytes ckpt =
          PlanCheckpointBytes(ModelParameters(m), world, p.master_bytes,
                              config.checkpoint.export_dtype == "bf16" ? 2 : p.master_bytes);
      if (p.overflow || ckpt.overflow) {
        BATON_FAIL(a->frames > 0 ? kExitUsage : kExitConfig,
                   "plan-memory: the plan's byte counts exceed 2^63 (the model of " +
                       std::to_string(p.parameters) + " parameters with a row of " +
                       std::to_string(row.tokens) + " tokens): no device holds this run",
                   "shrink the model or the longest row");
      }

      const double limit_gb = cuda ? config.slurm.gpu_memory_gb : config.slurm.mem_per_task_gb;
      const std::string limit_key = cuda ? "slurm.gpu_memory_gb" : "slurm.mem_per_task_gb";
      // The schema bounds both keys (docs/run_config.md), so the product is an int64.
      const int64_t limit = int64_t(limit_gb * double(int64_t(1) << 30));

      if (a->json) {
        nlohmann::ordered_json j;
        j["config"] = a->config;
        j["world_size"] = world;
        j["dtype"] = dtype;
        j["device"] = config.train.device;
        j["shard"] = config.optim.shard;
        j["activation_checkpointing"] = config.train.activation_checkpointing;
        j["parameters"] = {{"total", p.parameters}, {"trainable", p.trainable}};
        j["row"] = {{"source", row_source},
                    {"batch", row.batch},
                    {"padded_frames", row.padded_frames},
                    {"tokens", row.tokens},
                    {"valid_tokens", row.valid_tokens},
                    {"key_slots", row.key_slots},
                    {"computed_pairs", row.computed_pairs},
                    {"recomputed_call_pairs", row.call_pairs},
                    {"chunk", row.chunk},
                    {"window", row.window}};
        j["bytes"] = {{"weights", p.weights},
                      {"master_share", p.master_share},
                      {"gradients", p.gradients},
                      {"gradients_held", p.gradients_held},
                      {"optimizer", p.optimizer},
                      {"collective_buffers", p.collective_buffers},
                      {"autocast_copies", p.autocast_copies},
                      {"activations", p.activations_used},
                      {"heap_overhead", p.heap_overhead},
                      {"runtime", p.runtime},
                      {"checkpoint_snapshot", p.checkpoint_snapshot},
                      {"total", p.total}};
        j["checkpoint_snapshot_in_total"] = !cuda;
        j["activations"] = {{"none", p.activations.none},
                            {"blocks", p.activations.blocks},
                            {"blocks+attention", p.activations.blocks_attention},
                            {"per_block", p.activations.per_block},
                            {"outside_blocks", p.activations.outside_blocks},
                            {"inputs", p.activations.inputs},
                            {"working", p.activations.working},
                            {"per_block_attention", p.activations.per_block_attention},
                            {"attention_call", p.activations.attention_call},
                            {"working_attention", p.activations.working_attention}};
        j["heap_factor"] = s.heap_factor;
        // Per-rank figures only for worlds a reader would list; the largest share is what a
        // save's time follows.
        j["checkpoint"] = {{"bytes_total", ckpt.total},
                           {"bytes_per_rank_max", ckpt.largest},
                           {"export_dtype", config.checkpoint.export_dtype}};
        if (world <= 64) j["checkpoint"]["rank_bytes"] = ckpt.rank_bytes;
        j["total_by_checkpointing"] = {{"none", p.total_none},
                                       {"blocks", p.total_blocks},
                                       {"blocks+attention", p.total_blocks_attention}};
        if (limit > 0) {
          j["limit"] = {{"key", limit_key}, {"gb", limit_gb}, {"bytes", limit}};
          j["fits"] = p.total <= limit;
        } else {
          j["limit"] = nullptr;
          j["fits"] = nullptr;
        }
        std::cout << j.dump() << "\n";
        return kExitOk;
      }
      std::printf("memory plan of %s: %lld rank(s), %s on %s, optim.shard %s\n", a->config.c_str(),
                  (long long)world, dtype.c_str(), config.train.device.c_str(),
                  config.optim.shard.c_str());
      std::printf("model             %lld parameters (%lld trainable), D %lld, %lld layers\n",
                  (long long)p.parameters, (long long)p.trainable, (long long)m.dim,
                  (long long)m.layers);
      std::printf(
          "longest row       %lld tokens: %lld episode(s) x %lld frames (%s), chunk %lld, "
          "window %lld\n",
          (long long)row.tokens, (long long)row.batch, (long long)row.padded_frames,
          row_source.c_str(), (long long)row.chunk, (long long)row.window);
      auto line = [](const char* what, int64_t bytes, const std::string& note = "") {
        std::printf("%-33s %14lld B  %11s%s\n", what, (long long)bytes, Gib(bytes).c_str(),
                    note.c_str());
      };
      if (p.master_share > 0) {
        line("weights (bf16 compute copies)", p.weights,
             "  (" + std::to_string(p.bf16_copied) + " elements in bf16, the rest fp32)");
        line("master weights (owned share)", p.master_share);
      } else {
        line("weights", p.weights);
      }
      line("gradients", p.gradients,
           p.gradients_held != p.gradients ? "  (held between steps: " + Gib(p.gradients_held) + ")"
                                           : "");
      line("optimizer state", p.optimizer);
      line("collective buffers", p.collective_buffers);
      if (p.autocast_copies > 0) line("autocast bf16 weight copies", p.autocast_copies);
      // The configured setting's figure, then the other two's.
      const std::string used = config.train.activation_checkpointing;
      struct Setting {
        std::string name;
        int64_t activations, total;
      };
      const std::vector<Setting> settings = {
          {"none", p.activations.none, p.total_none},
          {"blocks", p.activations.blocks, p.total_blocks},
          {"blocks+attention", p.activations.blocks_attention, p.total_blocks_attention}};
      line(("activations (" + used + ")").c_str(), p.activations_used);
      for (const auto& o : settings) {
        if (o.name != used) line(("  (with " + o.name + " instead)").c_str(), o.activations);
      }
      if (p.heap_overhead > 0) {
        char note[64];
        std::snprintf(note, sizeof note, "  (x%.2f of the activations)", s.heap_factor - 1.0);
        line("CPU heap overhead", p.heap_overhead, note);
      }
      line(cuda ? "runtime (CUDA allowance)" : "runtime (libtorch, measured)", p.runtime);
      if (p.checkpoint_snapshot > 0) {
        line(cuda ? "checkpoint snapshot (host)" : "checkpoint snapshot", p.checkpoint_snapshot,
             cuda ? "  (host memory, not in the device total)" : "");
      }
      line("total per rank", p.total);
      line("checkpoint, largest rank", ckpt.largest,
           "  (" + Gib(ckpt.total) + " in all, written by " + std::to_string(world) + " rank(s))");
      for (const auto& o : settings) {
        if (o.name != used) line(("  (total with " + o.name + ")").c_str(), o.total);
      }
      if (limit > 0) {
        std::printf("limit             %s: %g GiB -> %s\n", limit_key.c_str(), limit_gb,
                    p.total <= limit ? "fits" : "DOES NOT FIT");
      } else {
        std::printf("limit             none (%s is 0)\n", limit_key.c_str());
      }
      return kExitOk;
    };
  });
}

}  // namespace baton
