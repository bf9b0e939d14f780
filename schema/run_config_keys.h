// The run config's key tables: every key of every section once, how it is read (and checked)
// and how ToYaml writes it back, so reading and writing cannot drift apart. The tables live in
// run_config_sections.cc (where the job runs and what it reads: run, slurm, data, model,
// objective) and run_config_training.cc (optim, checkpoint, train); run_config.cc walks them.
//
// Internal to the run config reader. The tables are built once (function-local statics) and
// read-only after; thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>
#include <algorithm>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "schema/run_config.h"
#include "schema/strict_yaml.h"
#include "schema/yaml_section.h"

namespace baton::config_reader {

// One key of a section of type S.
template <class S>
struct ConfigKey {
  const char* name;
  std::function<void(Section&, S&)> read;
  std::function<void(YAML::Emitter&, const S&)> write;
  // Whether ToYaml writes the key; empty = always. A key that is off by default and written
  // only when set keeps the frozen run.yaml (and its hash) of a run that does not use it as it
  // was before the key existed.
  std::function<bool(const S&)> written = {};
};

template <class S>
ConfigKey<S> IntKey(const char* name, int64_t S::*f, int64_t min, int64_t max = kMaxInt,
                    bool required = false) {
  return {name, [=](Section& s, S& x) { s.Int(name, &(x.*f), min, max, required); },
          [=](YAML::Emitter& e, const S& x) { e << x.*f; }};
}

template <class S>
ConfigKey<S> FloatKey(const char* name, double S::*f, double min, double max = kInf,
                      bool min_open = false) {
  return {name, [=](Section& s, S& x) { s.Float(name, &(x.*f), min, max, min_open); },
          [=](YAML::Emitter& e, const S& x) { e << FormatDouble(x.*f); }};
}

template <class S>
ConfigKey<S> StringKey(const char* name, std::string S::*f) {
  return {name, [=](Section& s, S& x) { s.String(name, &(x.*f)); },
          [=](YAML::Emitter& e, const S& x) { e << x.*f; }};
}

template <class S, class E>
ConfigKey<S> EnumKey(const char* name, E S::*f, std::vector<std::pair<std::string, E>> choices) {
  return {name, [=](Section& s, S& x) { s.Enum<E>(name, &(x.*f), choices); },
          [=](YAML::Emitter& e, const S& x) {
            for (const auto& [text, value] : choices) {
              if (value == x.*f) e << text;
            }
          }};
}

// A key of a closed vocabulary (schema/vocabularies.h): its names, or only `allowed` of them.
template <class S, class E>
ConfigKey<S> VocabularyKey(const char* name, E S::*f, std::vector<E> allowed = {}) {
  std::vector<std::pair<std::string, E>> choices;
  for (const Word<E>& w : Vocabulary<E>::kWords) {
    if (allowed.empty() || std::find(allowed.begin(), allowed.end(), w.value) != allowed.end()) {
      choices.emplace_back(w.name, w.value);
    }
  }
  return EnumKey<S, E>(name, f, std::move(choices));
}

// A key whose reading needs more than a range (its own checks), written as a string.
template <class S>
ConfigKey<S> CustomStringKey(const char* name, std::string S::*f,
                             std::function<void(Section&, S&)> read) {
  return {name, std::move(read), [=](YAML::Emitter& e, const S& x) { e << x.*f; }};
}

template <class S>
void ReadKeys(Section& s, S& x, const std::vector<ConfigKey<S>>& keys) {
  for (const auto& k : keys) k.read(s, x);
}

// `p` resolved against the config file's folder, absolute and normalised; "" stays "".
std::string Resolve(const Context& ctx, const std::string& p);

const std::vector<ConfigKey<RunSection>>& RunKeys();
const std::vector<ConfigKey<SlurmSection>>& SlurmKeys();
const std::vector<ConfigKey<DataSection>>& DataKeys();
const std::vector<ConfigKey<ModelSection>>& ModelKeys();
const std::vector<ConfigKey<ObjectiveSection>>& ObjectiveKeys();
const std::vector<ConfigKey<OptimSection>>& OptimKeys();
const std::vector<ConfigKey<CheckpointSection>>& CheckpointKeys();
const std::vector<ConfigKey<TrainSection>>& TrainKeys();
const std::vector<ConfigKey<EvalSection>>& EvalKeys();

// Each reads its section of `root` into `c`, with the checks across keys of that section.
void ReadRun(Context& ctx, const YAML::Node& root, RunConfig& c);
void ReadSlurm(Context& ctx, const YAML::Node& root, RunConfig& c);
void ReadData(Context& ctx, const YAML::Node& root, RunConfig& c);
void ReadModel(Context& ctx, const YAML::Node& root, RunConfig& c);
void ReadObjective(Context& ctx, const YAML::Node& root, RunConfig& c);
void ReadOptim(Context& ctx, const YAML::Node& root, RunConfig& c);
void ReadCheckpoint(Context& ctx, const YAML::Node& root, RunConfig& c);
void ReadTrain(Context& ctx, const YAML::Node& root, RunConfig& c);
// After the others: checks eval against data and checkpoint.keep_best against eval.
void ReadEval(Context& ctx, const YAML::Node& root, RunConfig& c);

}  // namespace baton::config_reader
