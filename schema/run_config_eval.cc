// The eval: section and checkpoint.keep_best, read and checked against the sections before them
// (docs/eval.md). The dataset-level checks (episode indices in range, overlap with training by
// content) need the dataset index and are the trainer's and submit's (trainer/eval/).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "schema/run_config_keys.h"

namespace baton::config_reader {
namespace {

void ReadEpisodes(Section& s, EvalSection& x) {
  const YAML::Node v = s.Get("episodes");
  if (!v.IsDefined() || v.IsNull()) return;
  if (!v.IsSequence()) {
    s.ctx().Error(v, "eval.episodes", "expected a list of episode indices, got " + Describe(v));
    return;
  }
  if (v.size() == 0) {
    s.ctx().Error(v, "eval.episodes", "the eval set is empty (list at least one episode)");
    return;
  }
  std::set<int64_t> seen;
  for (const YAML::Node& e : v) {
    int64_t i = 0;
    if (!ParseInt(e, &i) || i < 0) {
      s.ctx().Error(e, "eval.episodes",
                    "expected an episode index (an integer >= 0), got " + Describe(e));
    } else if (!seen.insert(i).second) {
      s.ctx().Error(e, "eval.episodes", "episode " + std::to_string(i) + " is listed twice");
    } else {
      x.episodes.push_back(i);
    }
  }
}

void WriteEpisodes(YAML::Emitter& e, const EvalSection& x) {
  e << YAML::Flow << YAML::BeginSeq;
  for (int64_t i : x.episodes) e << i;
  e << YAML::EndSeq;
}

void ReadEvalData(Section& s, EvalSection& x) {
  if (!s.String("data", &x.data)) return;
  if (x.data.empty()) {
    s.ctx().Error(s.node()["data"], "eval.data",
                  "must name the eval dataset folder, got an empty value");
    return;
  }
  x.data = Resolve(s.ctx(), x.data);
}

bool KnownMetric(const std::string& name) {
  return std::any_of(std::begin(kEvalMetricNames), std::end(kEvalMetricNames),
                     [&](const char* m) { return name == m; });
}

std::string MetricList() {
  std::string out;
  for (const char* m : kEvalMetricNames) out += (out.empty() ? "" : ", ") + std::string(m);
  return out;
}

// checkpoint.keep_best: {metric: eval.loss, k: 2}.
void ReadKeepBest(Context& ctx, const YAML::Node& checkpoint, RunConfig& c) {
  if (!checkpoint.IsDefined() || !checkpoint.IsMap()) return;
  const YAML::Node v = checkpoint["keep_best"];
  if (!v.IsDefined() || v.IsNull()) return;
  if (!v.IsMap()) {
    ctx.Error(v, "checkpoint.keep_best",
              "expected a mapping {metric: eval.loss, k: 2}, got " + Describe(v));
    return;
  }
  CheckpointSection& x = c.checkpoint;
  for (const auto& kv : v) {
    const std::string key = kv.first.as<std::string>();
    if (key != "metric" && key != "k") {
      ctx.Error(kv.first, "checkpoint.keep_best." + key, "unknown key (known: metric, k)");
    }
  }
  const YAML::Node metric = v["metric"];
  const YAML::Node k = v["k"];
  if (!metric.IsDefined() || !metric.IsScalar()) {
    ctx.Error(metric.IsDefined() ? metric : v, "checkpoint.keep_best.metric",
              "required: the metric to rank checkpoints by (" + MetricList() + ")");
  } else if (!KnownMetric(metric.Scalar())) {
    ctx.Error(
        metric, "checkpoint.keep_best.metric",
        "no eval produces the metric '" + metric.Scalar() + "' (known: " + MetricList() + ")");
  } else {
    x.keep_best_metric = metric.Scalar();
  }
  if (!k.IsDefined() || !ParseInt(k, &x.keep_best_k)) {
    ctx.Error(k.IsDefined() ? k : v, "checkpoint.keep_best.k",
              "required: how many of the best checkpoints to keep (an integer >= 1)");
    x.keep_best_metric.clear();
  } else if (x.keep_best_k < 1) {
    ctx.Error(k, "checkpoint.keep_best.k",
              "must be at least 1 (got " + std::to_string(x.keep_best_k) + ")");
    x.keep_best_metric.clear();
  }
  if (!x.keep_best_metric.empty() && !c.eval.enabled()) {
    ctx.Error(v, "checkpoint.keep_best",
              "ranks checkpoints by " + x.keep_best_metric +
                  ", but the config has no eval: section to produce it");
  }
}

}  // namespace

const std::vector<ConfigKey<EvalSection>>& EvalKeys() {
  using S = EvalSection;
  static const std::vector<ConfigKey<S>> keys = {
      {"fraction",
       [](Section& s, S& x) { s.Float("fraction", &x.fraction, 0.0, 1.0, /*min_open=*/true); },
       [](YAML::Emitter& e, const S& x) { e << FormatDouble(x.fraction); },
       [](const S& x) { return x.fraction > 0; }},
      IntKey<S>("seed", &S::seed, 0),
      {"episodes", ReadEpisodes, WriteEpisodes, [](const S& x) { return !x.episodes.empty(); }},
      {"data", ReadEvalData, [](YAML::Emitter& e, const S& x) { e << x.data; },
       [](const S& x) { return !x.data.empty(); }},
      IntKey<S>("every", &S::every, 1),
      VocabularyKey<S, EvalMode>("mode", &S::mode),
      StringKey<S>("partition", &S::partition),
      StringKey<S>("time", &S::time),
      IntKey<S>("cpus_per_task", &S::cpus_per_task, 0, 4096),
  };
  return keys;
}

void ReadEval(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "eval");
  EvalSection& x = c.eval;
  if (s.present()) {
    ReadKeys(s, x, EvalKeys());
    s.Finish();
    const int sources = (x.fraction > 0) + !x.episodes.empty() + !x.data.empty();
    const bool fraction_given = s.node()["fraction"].IsDefined();
    if (fraction_given && x.fraction >= 1.0) {
      ctx.Error(s.node()["fraction"], "eval.fraction",
                "must be below 1: a fraction of 1 leaves no episode to train on");
    }
    if (sources > 1) {
      ctx.Error(s.node(), "eval",
                "give one eval set: fraction (with seed), episodes, or data, not several");
    } else if (sources == 0 && !s.node()["episodes"].IsDefined() && !fraction_given) {
      ctx.Error(s.node(), "eval",
                "the eval set is empty: give fraction (with seed), episodes, or data");
    }
    if (!x.data.empty() && !c.data.path.empty() && x.data == c.data.path) {
      ctx.Error(
          s.node()["data"], "eval.data",
          "is data.path itself: every eval episode would be a training episode ('" + x.data + "')");
    }
  }
  ReadKeepBest(ctx, root["checkpoint"], c);
}

}  // namespace baton::config_reader
