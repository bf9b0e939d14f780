#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "schema/dataset_folder.h"
#include "schema/run_config_keys.h"

namespace baton::config_reader {
namespace fs = std::filesystem;

std::string Resolve(const Context& ctx, const std::string& p) {
  if (p.empty()) return p;
  fs::path path(p);
  if (path.is_relative()) path = ctx.anchor / path;
  return fs::absolute(path).lexically_normal().string();
}

namespace {

bool ValidSlurmTime(const std::string& t) {
  // minutes | MM:SS | HH:MM:SS | D-HH | D-HH:MM | D-HH:MM:SS | UNLIMITED
  static const std::regex kTime(
      "UNLIMITED|[0-9]+|[0-9]+:[0-9]{1,2}|[0-9]+:[0-9]{1,2}:[0-9]{1,2}|"
      "[0-9]+-[0-9]{1,2}(:[0-9]{1,2}(:[0-9]{1,2})?)?");
  return std::regex_match(t, kTime);
}

// data.path: required, resolved against the config's folder, and (unless the filesystem is not
// this reader's concern) an existing folder.
void ReadDataPath(Section& s, DataSection& x) {
  Context& ctx = s.ctx();
  if (!s.String("path", &x.path, /*required=*/true)) return;
  const YAML::Node v = s.node()["path"];
  if (x.path.empty()) {
    ctx.Error(v, "data.path", "must name the dataset folder, got an empty value");
    return;
  }
  x.path = Resolve(ctx, x.path);
  std::error_code ec;
  if (ctx.options.check_filesystem && !fs::is_directory(x.path, ec)) {
    ctx.Error(v, "data.path", "no such dataset folder '" + x.path + "'");
  }
}

// data.batch_size, and against the dataset: a batch larger than the dataset would repeat
// episodes inside one batch.
void ReadBatchSize(Section& s, DataSection& x) {
  Context& ctx = s.ctx();
  const size_t errors_before = ctx.errors.size() + ctx.dropped;
  s.Int("batch_size", &x.batch_size, 1, 65536);
  std::error_code ec;
  if (!ctx.options.check_filesystem || ctx.errors.size() + ctx.dropped != errors_before ||
      x.path.empty() || !fs::is_directory(x.path, ec)) {
    return;
  }
  // A LeRobot folder also has a meta/episodes.jsonl, in another schema: the trainer's index
  // reader names it as such (exit 65, "import it first"), which says more than a count would.
  if (IsLeRobotFolder(x.path)) return;
  const std::string index = (fs::path(x.path) / "meta" / "episodes.jsonl").string();
  const Result<int64_t> episodes = CountEpisodes(index, x.batch_size);
  const YAML::Node batch = s.node()["batch_size"];
  if (!episodes.ok()) {
    ctx.Error(s.node()["path"], "data.path", episodes.status().message());
  } else if (episodes.value() >= 0 && x.batch_size > episodes.value()) {
    ctx.Error(batch ? batch : s.node()["path"], "data.batch_size",
              "value " + std::to_string(x.batch_size) + (batch ? "" : " (the default)") +
                  " exceeds the dataset's " + std::to_string(episodes.value()) + " episodes (" +
                  index + ")");
  }
}

// model.init_from: resolved against the config's folder and (when the filesystem is this
// reader's concern) an existing folder; what it holds is checked by the trainer.
void ReadInitFrom(Section& s, ModelSection& x) {
  if (!s.String("init_from", &x.init_from) || x.init_from.empty()) return;
  x.init_from = Resolve(s.ctx(), x.init_from);
  std::error_code ec;
  if (s.ctx().options.check_filesystem && s.ctx().options.check_init_from &&
      !fs::is_directory(x.init_from, ec)) {
    s.ctx().Error(
        s.node()["init_from"], "model.init_from",
        "no such folder '" + x.init_from + "' (an upstream transformer/ folder or its parent)");
  }
}

}  // namespace

const std::vector<ConfigKey<RunSection>>& RunKeys() {
  using S = RunSection;
  static const std::vector<ConfigKey<S>> keys = {
      CustomStringKey<S>("name", &S::name,
                         [](Section& s, S& x) {
                           if (!s.String("name", &x.name)) return;
                           static const std::regex kName("[^\\x00-\\x1f\\x7f]{1,128}");
                           if (!std::regex_match(x.name, kName)) {
                             s.ctx().Error(
                                 s.node()["name"], "run.name",
                                 "must be 1-128 characters without control characters, got '" +
                                     x.name + "'");
                           }
                         }),
      CustomStringKey<S>("dir", &S::dir,
                         [](Section& s, S& x) {
                           if (s.String("dir", &x.dir)) x.dir = Resolve(s.ctx(), x.dir);
                         }),
      IntKey<S>("steps", &S::steps, 1, kMaxInt, /*required=*/true),
      IntKey<S>("seed", &S::seed, 0),
  };
  return keys;
}

const std::vector<ConfigKey<SlurmSection>>& SlurmKeys() {
  using S = SlurmSection;
  static const std::vector<ConfigKey<S>> keys = {
      StringKey<S>("partition", &S::partition),
      StringKey<S>("qos", &S::qos),
      StringKey<S>("account", &S::account),
      StringKey<S>("cluster", &S::cluster),
      IntKey<S>("nodes", &S::nodes, 1, 1 << 20),
      IntKey<S>("ntasks_per_node", &S::ntasks_per_node, 1, 1024),
      IntKey<S>("gpus_per_node", &S::gpus_per_node, 0, 64),
      IntKey<S>("cpus_per_task", &S::cpus_per_task, 1, 4096),
      // Up to 1 PiB: beyond any machine, and the bytes and MiB derived from it stay int64.
      FloatKey<S>("gpu_memory_gb", &S::gpu_memory_gb, 0.0, double(1 << 20)),
      FloatKey<S>("mem_per_task_gb", &S::mem_per_task_gb, 0.0, double(1 << 20)),
      CustomStringKey<S>("time", &S::time,
                         [](Section& s, S& x) {
                           if (s.String("time", &x.time) && !ValidSlurmTime(x.time)) {
                             s.ctx().Error(
                                 s.node()["time"], "slurm.time",
                                 "expected a SLURM time limit (minutes, MM:SS, HH:MM:SS or "
                                 "D-HH:MM:SS), got '" +
                                     x.time + "'");
                           }
                         }),
      VocabularyKey<S, Signal>("signal", &S::signal, {Signal::kUsr1, Signal::kUsr2, Signal::kTerm}),
      IntKey<S>("signal_lead_s", &S::signal_lead_s, 1, 65535),
      IntKey<S>("max_restarts", &S::max_restarts, 0),
      IntKey<S>("max_failures", &S::max_failures, 0),
      IntKey<S>("in_job_restarts", &S::in_job_restarts, 0, 100),
      EnumKey<S, bool>("release_requeue_hold", &S::release_requeue_hold,
                       {{"false", false}, {"true", true}}),
      FloatKey<S>("release_hold_after_s", &S::release_hold_after_s, 1.0, 3600.0),
      FloatKey<S>("preempt_grace_s", &S::preempt_grace_s, 0.0, 86400.0),
  };
  return keys;
}

const std::vector<ConfigKey<DataSection>>& DataKeys() {
  using S = DataSection;
  static const std::vector<ConfigKey<S>> keys = {
      CustomStringKey<S>("path", &S::path, ReadDataPath),
      {"batch_size", ReadBatchSize, [](YAML::Emitter& e, const S& x) { e << x.batch_size; }},
      IntKey<S>("pad_multiple", &S::pad_multiple, 1, 4096),
      IntKey<S>("pool_factor", &S::pool_factor, 1, 1 << 20),
      VocabularyKey<S, SamplerPlan>("plan", &S::plan),
      IntKey<S>("prefetch", &S::prefetch, 0, 1024),
  };
  return keys;
}

const std::vector<ConfigKey<ModelSection>>& ModelKeys() {
  using S = ModelSection;
  static const std::vector<ConfigKey<S>> keys = {
      CustomStringKey<S>("init_from", &S::init_from, ReadInitFrom),
      IntKey<S>("dim", &S::dim, 1, 1 << 16),
      IntKey<S>("heads", &S::heads, 1, 1024),
      IntKey<S>("layers", &S::layers, 1, 1024),
      IntKey<S>("ffn_dim", &S::ffn_dim, 1, 1 << 20),
      IntKey<S>("freq_dim", &S::freq_dim, 2, 1 << 16),
      IntKey<S>("patch_size", &S::patch_size, 1, 64),
      FloatKey<S>("rope_theta", &S::rope_theta, 1.0),
      FloatKey<S>("eps", &S::eps, 0.0, 1.0, /*min_open=*/true),
  };
  return keys;
}

const std::vector<ConfigKey<ObjectiveSection>>& ObjectiveKeys() {
  using S = ObjectiveSection;
  static const std::vector<ConfigKey<S>> keys = {
      FloatKey<S>("video_shift", &S::video_shift, 0.0, kInf, /*min_open=*/true),
      FloatKey<S>("action_shift", &S::action_shift, 0.0, kInf, /*min_open=*/true),
      FloatKey<S>("clean_noise_prob", &S::clean_noise_prob, 0.0, 1.0),
      FloatKey<S>("video_loss_weight", &S::video_loss_weight, 0.0),
      FloatKey<S>("action_loss_weight", &S::action_loss_weight, 0.0),
      IntKey<S>("chunk_min", &S::chunk_min, 1, 4096),
      IntKey<S>("chunk_max", &S::chunk_max, 1, 4096),
      IntKey<S>("window_min", &S::window_min, 0, 1 << 20),
      IntKey<S>("window_max", &S::window_max, 0, 1 << 20),
      FloatKey<S>("text_dropout", &S::text_dropout, 0.0, 1.0),
  };
  return keys;
}

void ReadRun(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "run");
  s.set_root_mark(root);
  ReadKeys(s, c.run, RunKeys());
  s.Finish();
}

void ReadSlurm(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "slurm");
  ReadKeys(s, c.slurm, SlurmKeys());
  s.Finish();
}

void ReadData(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "data");
  s.set_root_mark(root);
  ReadKeys(s, c.data, DataKeys());
  s.Finish();
}

void ReadModel(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "model");
  auto& x = c.model;
  ReadKeys(s, x, ModelKeys());
  s.Finish();
  if (s.present()) {
    for (const auto& k : ModelKeys()) {
      if (std::string(k.name) != "init_from" && s.node()[k.name]) x.given.push_back(k.name);
    }
  }
  if (x.dim % x.heads != 0) {
    ctx.Error(s.present() ? s.node() : root, "model.dim",
              "value " + std::to_string(x.dim) + " is not divisible by model.heads " +
                  std::to_string(x.heads));
  } else {
    const int64_t hd = x.dim / x.heads;
    // 3-axis RoPE splits the head into (hd - 4*(hd/6), 2*(hd/6), 2*(hd/6)) rotary pairs.
    if (hd % 2 != 0 || hd < 6) {
      ctx.Error(
          s.present() ? s.node() : root, "model.dim",
          "head size dim/heads = " + std::to_string(hd) + " must be even and >= 6 for 3-axis RoPE");
    }
  }
  if (x.freq_dim % 2 != 0) {
    ctx.Error(s.present() ? s.node() : root, "model.freq_dim",
              "value " + std::to_string(x.freq_dim) + " must be even (sin and cos halves)");
  }
}

void ReadObjective(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "objective");
  auto& x = c.objective;
  ReadKeys(s, x, ObjectiveKeys());
  s.Finish();
  const YAML::Node& at = s.present() ? s.node() : root;
  if (x.chunk_min > x.chunk_max) {
    ctx.Error(at, "objective.chunk_min",
              "value " + std::to_string(x.chunk_min) + " exceeds objective.chunk_max " +
                  std::to_string(x.chunk_max));
  }
  if (x.window_min > x.window_max) {
    ctx.Error(at, "objective.window_min",
              "value " + std::to_string(x.window_min) + " exceeds objective.window_max " +
                  std::to_string(x.window_max));
  }
}

}  // namespace baton::config_reader
