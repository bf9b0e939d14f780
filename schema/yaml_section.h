// Section: one mapping of a run config (run:, slurm:, ...) read strictly. Each typed read names
// the key it takes (Int, Float, String, Enum); Finish() then reports every key of the mapping
// that no read asked for, listing the known ones. Wrong types and out-of-range values go to the
// Context with file:line:col and the key path; the field keeps its default.
//
// Internal to the run config reader. Borrows the Context; single-threaded.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "schema/strict_yaml.h"

namespace baton::config_reader {

class Section {
 public:
  // An absent or null section reads every key as absent; a section that is not a mapping is an
  // error (and reads as absent).
  Section(Context& ctx, const YAML::Node& root, std::string name);
  bool present() const { return node_ && node_.IsMap(); }
  const YAML::Node& node() const { return node_; }

  // Returns the value node, or an invalid node when absent (the default stays).
  YAML::Node Get(const char* key, bool required = false);

  void Int(const char* key, int64_t* out, int64_t min, int64_t max = kMaxInt,
           bool required = false);
  // `min_open`: the range excludes `min`, also after rounding to float32.
  void Float(const char* key, double* out, double min, double max = kInf, bool min_open = false);
  // False when absent or not a scalar; null reads as "".
  bool String(const char* key, std::string* out, bool required = false);
  template <class E>
  void Enum(const char* key, E* out, const std::vector<std::pair<std::string, E>>& choices);

  // Reports the keys no read asked for.
  void Finish();

  std::string Key(const char* key) const { return name_ + "." + key; }
  // Where a missing required key is reported when the whole section is absent.
  void set_root_mark(const YAML::Node& root) { root_mark_.reset(root); }
  Context& ctx() { return ctx_; }
  const std::string& name() const { return name_; }

 private:
  std::string Known() const;

  Context& ctx_;
  std::string name_;
  YAML::Node node_;
  YAML::Node root_mark_;
  std::set<std::string> seen_;
};

template <class E>
void Section::Enum(const char* key, E* out, const std::vector<std::pair<std::string, E>>& choices) {
  YAML::Node v = Get(key);
  if (!v.IsDefined()) return;
  std::string names;
  for (const auto& [name, value] : choices) {
    if (v.IsScalar() && v.Scalar() == name) {
      *out = value;
      return;
    }
    names += (names.empty() ? "" : ", ") + name;
  }
  ctx_.Error(v, Key(key), "expected one of " + names + ", got " + Describe(v));
}

}  // namespace baton::config_reader
