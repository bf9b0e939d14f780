#include "schema/run_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "schema/alerts_config.h"
#include "schema/run_config_keys.h"
#include "schema/strict_yaml.h"

namespace baton {
namespace fs = std::filesystem;
using namespace config_reader;

const char* DTypeName(DType dtype) { return Name(dtype); }

namespace {

const std::vector<std::string> kSections = {"run",   "slurm",      "data",  "model",  "objective",
                                            "optim", "checkpoint", "train", "alerts", "eval"};

template <class S>
void WriteSection(YAML::Emitter& e, const char* name, const S& x,
                  const std::vector<ConfigKey<S>>& keys) {
  e << YAML::Key << name << YAML::Value << YAML::BeginMap;
  for (const auto& k : keys) {
    if (k.written && !k.written(x)) continue;
    e << YAML::Key << k.name << YAML::Value;
    k.write(e, x);
  }
  e << YAML::EndMap;
}

// With init_from, the sizes come from the folder's config.json: only the keys the user gave are
// written back (a frozen run.yaml must not turn defaults into demands the trainer checks).
void WriteModelSection(YAML::Emitter& e, const ModelSection& x) {
  e << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  for (const auto& k : ModelKeys()) {
    const std::string name = k.name;
    if (!x.init_from.empty() && name != "init_from" &&
        std::find(x.given.begin(), x.given.end(), name) == x.given.end()) {
      continue;
    }
    e << YAML::Key << k.name << YAML::Value;
    k.write(e, x);
  }
  e << YAML::EndMap;
}

}  // namespace

Result<RunConfig> ParseRunConfig(const std::string& yaml_text, const std::string& source,
                                 const RunConfigOptions& options) {
  if (yaml_text.size() > static_cast<size_t>(kMaxRunConfigBytes)) {
    return Status::Config(source + ": " + std::to_string(yaml_text.size()) +
                          " bytes is too large for a run config (at most " +
                          std::to_string(kMaxRunConfigBytes) + " bytes)");
  }
  Context ctx;
  ctx.source = source;
  ctx.options = options;
  {
    std::error_code ec;
    fs::path p(source);
    ctx.anchor = p.has_parent_path() ? fs::absolute(p.parent_path(), ec) : fs::current_path(ec);
  }
  if (!CheckYamlStructure(ctx, yaml_text)) return ctx.ToStatus();
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return Status::Config(MarkText(source, e.mark) + ": malformed YAML: " + e.msg);
  }
  if (!root.IsMap()) {
    if (!ctx.errors.empty()) return ctx.ToStatus();  // a second document, named by line
    return Status::Config(source + ": expected a mapping with sections " +
                          "run, slurm, data, model, objective, optim, checkpoint, train; got " +
                          (root.IsNull() ? std::string("an empty file") : Describe(root)));
  }

  RunConfig c;
  c.source = source;
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (std::find(kSections.begin(), kSections.end(), key) == kSections.end()) {
        ctx.Error(kv.first, key,
                  "unknown section (known: run, slurm, data, model, objective, optim, "
                  "checkpoint, train, alerts, eval)");
      }
    }
    ReadRun(ctx, root, c);
    ReadSlurm(ctx, root, c);
    ReadData(ctx, root, c);
    ReadModel(ctx, root, c);
    ReadObjective(ctx, root, c);
    ReadOptim(ctx, root, c);
    ReadCheckpoint(ctx, root, c);
    ReadTrain(ctx, root, c);
    ReadEval(ctx, root, c);
    AlertsSection alerts;  // checked here; frozen beside ToYaml's text (AppendAlerts)
    ReadAlerts(ctx, root, alerts);
  } catch (const YAML::Exception& e) {
    ctx.Add(source + ": unreadable YAML structure: " + e.msg);
  }
  if (c.run.name.empty()) c.run.name = fs::path(source).stem().string();
  if (c.run.name.empty()) c.run.name = "run";

  if (!ctx.errors.empty()) return ctx.ToStatus();
  return c;
}

std::string ToYaml(const RunConfig& c) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  WriteSection(e, "run", c.run, RunKeys());
  WriteSection(e, "slurm", c.slurm, SlurmKeys());
  WriteSection(e, "data", c.data, DataKeys());
  WriteModelSection(e, c.model);
  WriteSection(e, "objective", c.objective, ObjectiveKeys());
  WriteSection(e, "optim", c.optim, OptimKeys());
  WriteSection(e, "checkpoint", c.checkpoint, CheckpointKeys());
  WriteSection(e, "train", c.train, TrainKeys());
  if (c.eval.enabled()) WriteSection(e, "eval", c.eval, EvalKeys());
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace baton
