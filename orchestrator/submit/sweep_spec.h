// A sweep spec (docs/sweeps.md): a base run config, axes over its keys, and how many members
// may run at once. ParseSweepSpec reads and checks the spec; ExpandSweep turns its axes into the
// members, in array-task order, each with the values it sets; MemberConfigYaml writes a member's
// config as the base with those values set.
//
// Members are the cross product of the grid (first key slowest), then the zip rows, then the
// random draws, each factor present only when its axis is. Random draws are reproducible from
// the spec's seed on every platform (their own generator, not the standard library's
// distributions). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/status.h"

namespace baton {

struct SweepAxis {
  std::string kind;                    // "grid", "zip" or "random"
  std::string key;                     // dotted config key: "optim.lr"
  std::vector<nlohmann::json> values;  // grid/zip: the list; random choice: the choices
  std::string draw;                    // random only: "uniform", "log_uniform" or "choice"
  double low = 0, high = 0;            // random uniform/log_uniform bounds
};

struct SweepSpec {
  std::string path;          // the spec file as named
  std::string text;          // its text
  std::string base;          // the base config, resolved against the spec's folder
  std::string name;          // "" when the spec has none
  int64_t max_parallel = 0;  // 0: all at once
  std::vector<SweepAxis> axes;
  int64_t random_count = 0;
  uint64_t random_seed = 0;
};

struct SweepMember {
  int64_t index = 0;
  // (key, value) in axis order.
  std::vector<std::pair<std::string, nlohmann::json>> values;
  nlohmann::json ValuesJson() const;  // {"optim.lr": 0.0003, ...}
  std::string ValuesText() const;     // "optim.lr=0.0003 run.seed=1"
};

// The spec from YAML text; `path` names it in messages and anchors `base`. kInvalidArgument (64)
// for an empty axis; kConfig (78) naming the key for anything else wrong.
[[nodiscard]] Result<SweepSpec> ParseSweepSpec(const std::string& text, const std::string& path);
[[nodiscard]] Result<SweepSpec> LoadSweepSpec(const std::string& path);

// The members, index 0..N-1. kConfig when there would be none or more than `max_members`.
[[nodiscard]] Result<std::vector<SweepMember>> ExpandSweep(const SweepSpec& spec,
                                                           int64_t max_members = 100000);

// The base config's YAML with the member's values set (maps made for missing parents). kConfig
// naming the key when a parent on its path is not a map.
[[nodiscard]] Result<std::string> MemberConfigYaml(const std::string& base_yaml,
                                                   const SweepMember& member);

}  // namespace baton
