#include <string>
#include <vector>

#include "schema/run_config_keys.h"

namespace baton::config_reader {
namespace {

void ReadBetas(Section& s, OptimSection& x) {
  YAML::Node betas = s.Get("betas");
  if (!betas.IsDefined()) return;
  double b[2];
  if (!betas.IsSequence() || betas.size() != 2 || !ParseFloat(betas[0], &b[0]) ||
      !ParseFloat(betas[1], &b[1])) {
    s.ctx().Error(betas, "optim.betas",
                  "expected a list of two numbers [beta1, beta2], got " + Describe(betas));
  } else if (b[0] < 0 || b[0] >= 1 || b[1] < 0 || b[1] >= 1) {
    s.ctx().Error(betas, "optim.betas",
                  "values [" + betas[0].Scalar() + ", " + betas[1].Scalar() +
                      "] are out of range (each must be in [0, 1))");
  } else {
    x.betas = {b[0], b[1]};
  }
}

}  // namespace

const std::vector<ConfigKey<OptimSection>>& OptimKeys() {
  using S = OptimSection;
  static const std::vector<ConfigKey<S>> keys = {
      FloatKey<S>("lr", &S::lr, 0.0, kInf, /*min_open=*/true),
      {"betas", ReadBetas,
       [](YAML::Emitter& e, const S& x) {
         e << YAML::Flow << YAML::BeginSeq << FormatDouble(x.betas[0]) << FormatDouble(x.betas[1])
           << YAML::EndSeq;
       }},
      FloatKey<S>("weight_decay", &S::weight_decay, 0.0),
      FloatKey<S>("eps", &S::eps, 0.0, kInf, /*min_open=*/true),
      FloatKey<S>("grad_clip", &S::grad_clip, 0.0),
      IntKey<S>("warmup_steps", &S::warmup_steps, 0),
      IntKey<S>("resume_warmup_steps", &S::resume_warmup_steps, 0),
      IntKey<S>("grad_accum", &S::grad_accum, 1, 1 << 20),
      VocabularyKey<S, ShardMode>("shard", &S::shard),
      VocabularyKey<S, OptimMaster>("master", &S::master),
  };
  return keys;
}

const std::vector<ConfigKey<CheckpointSection>>& CheckpointKeys() {
  using S = CheckpointSection;
  static const std::vector<ConfigKey<S>> keys = {
      IntKey<S>("every", &S::every, 1),
      IntKey<S>("keep_last", &S::keep_last, 1),
      IntKey<S>("keep_every", &S::keep_every, 0),
      VocabularyKey<S, ExportDType>("export_dtype", &S::export_dtype),
      IntKey<S>("max_shard_bytes", &S::max_shard_bytes, 1),
      FloatKey<S>("write_gbps", &S::write_gbps, 0.0, 10000.0),
      EnumKey<S, bool>("async", &S::async, {{"false", false}, {"true", true}}),
      // Read (and checked against eval:) by ReadEval; asked for here so Finish knows the key.
      {"keep_best", [](Section& s, S&) { s.Get("keep_best"); },
       [](YAML::Emitter& e, const S& x) {
         e << YAML::Flow << YAML::BeginMap << YAML::Key << "metric" << YAML::Value
           << x.keep_best_metric << YAML::Key << "k" << YAML::Value << x.keep_best_k
           << YAML::EndMap;
       },
       [](const S& x) { return !x.keep_best_metric.empty(); }},
  };
  return keys;
}

const std::vector<ConfigKey<TrainSection>>& TrainKeys() {
  using S = TrainSection;
  static const std::vector<ConfigKey<S>> keys = {
      VocabularyKey<S, DType>("dtype", &S::dtype),
      VocabularyKey<S, Device>("device", &S::device),
      IntKey<S>("log_every", &S::log_every, 1),
      IntKey<S>("profile", &S::profile, 0),
      IntKey<S>("max_nonfinite_steps", &S::max_nonfinite_steps, 1),
      VocabularyKey<S, ActivationCheckpointing>("activation_checkpointing",
                                                &S::activation_checkpointing),
      FloatKey<S>("device_peak_tflops", &S::device_peak_tflops, 0.0),
      EnumKey<S, bool>("deterministic", &S::deterministic, {{"false", false}, {"true", true}}),
      FloatKey<S>("hang_min_s", &S::hang_min_s, 1.0, 86400.0),
      FloatKey<S>("hang_factor", &S::hang_factor, 1.0, 1000.0),
      FloatKey<S>("first_step_timeout_s", &S::first_step_timeout_s, 1.0, 86400.0),
  };
  return keys;
}

void ReadOptim(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "optim");
  ReadKeys(s, c.optim, OptimKeys());
  s.Finish();
  if (c.optim.master == OptimMaster::kSharded && c.optim.shard == ShardMode::kNone) {
    ctx.Error(s.node()["master"], "optim.master",
              "value sharded needs optim.shard optimizer or gradients (each master lives beside "
              "its owner's AdamW state), but optim.shard is none");
  }
}

void ReadCheckpoint(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "checkpoint");
  ReadKeys(s, c.checkpoint, CheckpointKeys());
  s.Finish();
}

void ReadTrain(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "train");
  auto& x = c.train;
  ReadKeys(s, x, TrainKeys());
  s.Finish();
  if (x.device == Device::kCuda && ctx.options.cuda != RunConfigOptions::Cuda::kYes) {
    const YAML::Node v = s.node()["device"];
    if (ctx.options.cuda == RunConfigOptions::Cuda::kNo) {
      ctx.Error(v, "train.device",
                "value cuda needs a baton-train built with CUDA, and this one was built without "
                "(use cpu, or rebuild with -DBATON_CUDA=ON against a CUDA libtorch)");
    } else {
      c.warnings.push_back(ctx.Where(v) +
                           ": train.device: value cuda needs a baton-train built with CUDA "
                           "(-DBATON_CUDA=ON); the trainer checks this when the job starts");
    }
  }
}

}  // namespace baton::config_reader
