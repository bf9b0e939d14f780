// The strict YAML reader under RunConfig: what YAML::Node alone lets through and a run config
// must not. A key given twice in one mapping, a second document, a quoted "4" where a number
// belongs, a float beyond float32's range: each is reported with file:line:col and the key path,
// and every problem is collected (Context) so a user fixes a config in one round trip.
//
// Internal to the run config reader (schema/run_config*.cc, schema/yaml_section.*); not an API
// for other code. Plain functions and values; thread-compatible.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cfloat>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "schema/run_config.h"
#include "schema/status.h"

namespace baton::config_reader {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
// The trainer computes in float32 (or bfloat16, whose range is float32's): a float key beyond
// this turns into inf on the first step.
constexpr double kFloatMax = FLT_MAX;

// "<source>:<line>:<col>", or just the source when the mark has no position.
std::string MarkText(const std::string& source, const YAML::Mark& mark);

// Collects every problem so a user fixes a config in one round trip, not one error per run;
// keeps the first kMaxRunConfigErrors and counts the rest.
struct Context {
  std::string source;
  std::filesystem::path anchor;  // folder that relative paths are resolved against
  RunConfigOptions options;
  std::vector<std::string> errors;
  size_t dropped = 0;  // errors past kMaxRunConfigErrors

  std::string Where(const YAML::Node& node) const { return MarkText(source, node.Mark()); }
  void Add(std::string line) {
    if (errors.size() < kMaxRunConfigErrors) {
      errors.push_back(std::move(line));
    } else {
      ++dropped;
    }
  }
  void Error(const YAML::Node& node, const std::string& key, const std::string& what) {
    Add(Where(node) + ": " + key + ": " + what);
  }
  Status ToStatus() const {
    std::string msg;
    for (const auto& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    if (dropped > 0) msg += "\n... and " + std::to_string(dropped) + " more";
    return Status::Config(msg);
  }
};

// The checks YAML::Node cannot make: repeated keys, and a second document (which YAML::Load
// would drop without a word), added to `ctx`. Returns false when the text is not YAML at all.
bool CheckYamlStructure(Context& ctx, const std::string& yaml_text);

// A node for messages: "null", "a mapping", "a list" or the quoted scalar.
std::string Describe(const YAML::Node& node);

// For messages: " (quoted or tagged !!str, ...)" when a string would be a number without its
// quotes or tag; "" otherwise.
std::string StringNumberHint(const YAML::Node& node);

// A scalar is a number only when its tag says so: plain ("?") or an explicit !!int / !!float.
// Quoted scalars carry the "!" tag and `!!str 4` the str tag: `batch_size: "4"` is a string.
bool ParseInt(const YAML::Node& node, int64_t* out);
// True when `node` is written as a decimal number; `*out` may then be +-inf (1e400) or beyond
// float32's range (1e39): the caller reports those as out of range, naming the value.
bool ParseFloat(const YAML::Node& node, double* out);
bool InFloatRange(double x);

// Shortest round-trip text of `v`, always with a '.' or an exponent ("1" -> "1.0").
std::string FormatDouble(double v);
// "> 0.0", ">= 1.0" or "in [0.0, 1.0]" / "in (0.0, 1.0]".
std::string RangeText(double min, double max, bool min_open);

}  // namespace baton::config_reader
