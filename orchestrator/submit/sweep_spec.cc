#include "orchestrator/submit/sweep_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "schema/input_file.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

constexpr uint64_t kMaxSpecBytes = 1 << 20;

// A YAML scalar as JSON: integer, float, bool, else string.
nlohmann::json ScalarJson(const YAML::Node& n) {
  const std::string s = n.Scalar();
  if (n.Tag() != "!") {  // unquoted
    if (s == "true" || s == "false") return s == "true";
    try {
      size_t used = 0;
      const long long i = std::stoll(s, &used);
      if (used == s.size()) return static_cast<int64_t>(i);
    } catch (...) {
    }
    try {
      size_t used = 0;
      const double d = std::stod(s, &used);
      if (used == s.size() && std::isfinite(d)) return d;
    } catch (...) {
    }
  }
  return s;
}

Result<std::vector<nlohmann::json>> ScalarList(const YAML::Node& n, const std::string& where) {
  if (!n.IsSequence()) return Status::Config(where + ": expected a list of values");
  if (n.size() == 0) return Status::InvalidArgument(where + ": the axis is empty (no values)");
  std::vector<nlohmann::json> out;
  for (const YAML::Node& v : n) {
    if (!v.IsScalar()) return Status::Config(where + ": every value must be a scalar");
    out.push_back(ScalarJson(v));
  }
  return out;
}

Status ParseRandom(const YAML::Node& r, const std::string& where, SweepSpec* spec) {
  if (!r.IsMap()) return Status::Config(where + ": expected {count, seed, keys}");
  for (const auto& kv : r) {
    const std::string k = kv.first.as<std::string>();
    if (k != "count" && k != "seed" && k != "keys")
      return Status::Config(where + "." + k + ": unknown key (count, seed, keys)");
  }
  try {
    spec->random_count = r["count"] ? r["count"].as<int64_t>() : 0;
    spec->random_seed = r["seed"] ? r["seed"].as<uint64_t>() : 0;
  } catch (const YAML::Exception&) {
    return Status::Config(where + ": count and seed must be whole numbers");
  }
  if (spec->random_count <= 0)
    return Status::InvalidArgument(where + ".count: must be at least 1 (the axis is empty)");
  const YAML::Node keys = r["keys"];
  if (!keys || !keys.IsMap() || keys.size() == 0)
    return Status::InvalidArgument(where + ".keys: the axis is empty (no keys)");
  for (const auto& kv : keys) {
    SweepAxis a;
    a.kind = "random";
    a.key = kv.first.as<std::string>();
    const std::string at = where + ".keys." + a.key;
    if (!kv.second.IsMap() || kv.second.size() != 1)
      return Status::Config(at +
                            ": expected one of {uniform: [lo, hi]}, {log_uniform: [lo, hi]}, "
                            "{choice: [...]}");
    a.draw = kv.second.begin()->first.as<std::string>();
    BATON_ASSIGN_OR_RETURN(a.values, ScalarList(kv.second.begin()->second, at + "." + a.draw));
    if (a.draw == "uniform" || a.draw == "log_uniform") {
      if (a.values.size() != 2 || !a.values[0].is_number() || !a.values[1].is_number())
        return Status::Config(at + "." + a.draw + ": expected [low, high], two numbers");
      a.low = a.values[0].get<double>();
      a.high = a.values[1].get<double>();
      if (!(a.low < a.high) || (a.draw == "log_uniform" && a.low <= 0))
        return Status::Config(at + "." + a.draw +
                              ": expected 0 < low < high for log_uniform, "
                              "low < high for uniform");
    } else if (a.draw != "choice") {
      return Status::Config(at + ": unknown draw '" + a.draw + "' (uniform, log_uniform, choice)");
    }
    spec->axes.push_back(std::move(a));
  }
  return Status::Ok();
}

Status ParseSpecNode(const YAML::Node& root, const std::string& path, SweepSpec* spec) {
  if (!root.IsMap()) return Status::Config(path + ": a sweep spec is a mapping");
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>();
    if (k != "base" && k != "name" && k != "max_parallel" && k != "grid" && k != "zip" &&
        k != "random")
      return Status::Config(path + ": " + k +
                            ": unknown key (base, name, max_parallel, grid, zip, random)");
  }
  if (!root["base"] || !root["base"].IsScalar() || root["base"].Scalar().empty())
    return Status::Config(path + ": base: the base run config is required");
  const fs::path base = root["base"].Scalar();
  spec->base = (base.is_absolute() ? base : fs::absolute(path).parent_path() / base)
                   .lexically_normal()
                   .string();
  if (root["name"]) spec->name = root["name"].as<std::string>();
  if (root["max_parallel"]) {
    try {
      spec->max_parallel = root["max_parallel"].as<int64_t>();
    } catch (const YAML::Exception&) {
      return Status::Config(path + ": max_parallel: expected a whole number");
    }
    if (spec->max_parallel < 1)
      return Status::Config(path + ": max_parallel: " + std::to_string(spec->max_parallel) +
                            " is below 1");
  }
  size_t zip_len = 0;
  std::string zip_first;
  for (const char* kind : {"grid", "zip"}) {
    const YAML::Node axes = root[kind];
    if (!axes) continue;
    if (!axes.IsMap() || axes.size() == 0)
      return Status::InvalidArgument(path + ": " + kind + ": the axis is empty (no keys)");
    for (const auto& kv : axes) {
      SweepAxis a;
      a.kind = kind;
      a.key = kv.first.as<std::string>();
      const std::string where = path + ": " + kind + "." + a.key;
      BATON_ASSIGN_OR_RETURN(a.values, ScalarList(kv.second, where));
      if (a.kind == "zip") {
        if (zip_len == 0) {
          zip_len = a.values.size();
          zip_first = a.key;
        } else if (a.values.size() != zip_len) {
          return Status::Config(where + ": " + std::to_string(a.values.size()) +
                                " values, but zip." + zip_first + " has " +
                                std::to_string(zip_len) + " (zip lists have equal lengths)");
        }
      }
      spec->axes.push_back(std::move(a));
    }
  }
  if (root["random"]) BATON_RETURN_IF_ERROR(ParseRandom(root["random"], path + ": random", spec));
  if (spec->axes.empty())
    return Status::InvalidArgument(path + ": no axis (grid, zip or random): nothing to sweep");
  std::set<std::string> seen;
  for (const SweepAxis& a : spec->axes) {
    if (!seen.insert(a.key).second)
      return Status::Config(path + ": " + a.key + ": varied by two axes");
  }
  return Status::Ok();
}

// splitmix64: the same draws on every platform and standard library.
uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Unit(uint64_t* state) { return static_cast<double>(NextRandom(state) >> 11) * 0x1.0p-53; }

}  // namespace

nlohmann::json SweepMember::ValuesJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : values) j[k] = v;
  return j;
}

std::string SweepMember::ValuesText() const {
  std::string s;
  for (const auto& [k, v] : values) {
    s += (s.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return s;
}

Result<SweepSpec> ParseSweepSpec(const std::string& text, const std::string& path) {
  SweepSpec spec;
  spec.path = path;
  spec.text = text;
  try {
    BATON_RETURN_IF_ERROR(ParseSpecNode(YAML::Load(text), path, &spec));
  } catch (const YAML::Exception& e) {
    return Status::Config(path + ": " + e.what());
  }
  return spec;
}

Result<SweepSpec> LoadSweepSpec(const std::string& path) {
  BATON_ASSIGN_OR_RETURN(const std::string text, ReadRegularFile(path, kMaxSpecBytes));
  return ParseSweepSpec(text, path);
}

Result<std::vector<SweepMember>> ExpandSweep(const SweepSpec& spec, int64_t max_members) {
  std::vector<std::vector<std::pair<std::string, nlohmann::json>>> rows = {{}};
  auto times = [&](const std::vector<std::vector<std::pair<std::string, nlohmann::json>>>& f) {
    std::vector<std::vector<std::pair<std::string, nlohmann::json>>> out;
    for (const auto& r : rows) {
      for (const auto& g : f) {
        auto joined = r;
        joined.insert(joined.end(), g.begin(), g.end());
        out.push_back(std::move(joined));
      }
    }
    rows = std::move(out);
  };
  int64_t total = 1;
  auto grow = [&](int64_t factor) -> Status {
    total *= factor;
    if (total > max_members)
      return Status::Config(spec.path + ": the axes make more than " + std::to_string(max_members) +
                            " members");
    return Status::Ok();
  };
  std::vector<std::vector<std::pair<std::string, nlohmann::json>>> zip;
  for (const SweepAxis& a : spec.axes) {
    if (a.kind == "grid") {
      BATON_RETURN_IF_ERROR(grow(static_cast<int64_t>(a.values.size())));
      std::vector<std::vector<std::pair<std::string, nlohmann::json>>> f;
      for (const nlohmann::json& v : a.values) f.push_back({{a.key, v}});
      times(f);
    } else if (a.kind == "zip") {
      if (zip.empty()) zip.resize(a.values.size());
      for (size_t i = 0; i < a.values.size(); ++i) zip[i].push_back({a.key, a.values[i]});
    }
  }
  if (!zip.empty()) {
    BATON_RETURN_IF_ERROR(grow(static_cast<int64_t>(zip.size())));
    times(zip);
  }
  if (spec.random_count > 0) {
    BATON_RETURN_IF_ERROR(grow(spec.random_count));
    uint64_t state = spec.random_seed;
    std::vector<std::vector<std::pair<std::string, nlohmann::json>>> draws;
    for (int64_t i = 0; i < spec.random_count; ++i) {
      std::vector<std::pair<std::string, nlohmann::json>> d;
      for (const SweepAxis& a : spec.axes) {
        if (a.kind != "random") continue;
        const double u = Unit(&state);
        if (a.draw == "uniform") {
          d.push_back({a.key, a.low + u * (a.high - a.low)});
        } else if (a.draw == "log_uniform") {
          d.push_back(
              {a.key, std::exp(std::log(a.low) + u * (std::log(a.high) - std::log(a.low)))});
        } else {
          const size_t pick =
              std::min(a.values.size() - 1, static_cast<size_t>(u * a.values.size()));
          d.push_back({a.key, a.values[pick]});
        }
      }
      draws.push_back(std::move(d));
    }
    times(draws);
  }
  std::vector<SweepMember> members;
  for (size_t i = 0; i < rows.size(); ++i) {
    members.push_back(SweepMember{static_cast<int64_t>(i), std::move(rows[i])});
  }
  return members;
}

Result<std::string> MemberConfigYaml(const std::string& base_yaml, const SweepMember& member) {
  YAML::Node root;
  try {
    root = YAML::Load(base_yaml);
  } catch (const YAML::Exception& e) {
    return Status::Config(std::string("the base config: ") + e.what());
  }
  if (!root.IsMap()) return Status::Config("the base config is not a mapping");
  for (const auto& [key, value] : member.values) {
    std::vector<std::string> parts;
    for (size_t s = 0, e; s <= key.size(); s = e + 1) {
      e = key.find('.', s);
      if (e == std::string::npos) e = key.size();
      parts.push_back(key.substr(s, e - s));
    }
    YAML::Node node = root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (parts[i].empty()) return Status::Config(key + ": not a config key");
      YAML::Node next = node[parts[i]];
      if (next.IsDefined() && !next.IsNull() && !next.IsMap())
        return Status::Config(key + ": " + parts[i] + " is not a section of the config");
      if (!next.IsMap()) {
        node[parts[i]] = YAML::Node(YAML::NodeType::Map);
        next = node[parts[i]];
      }
      node.reset(next);
    }
    YAML::Node leaf;
    if (value.is_string()) {
      leaf = value.get<std::string>();
    } else {
      leaf = YAML::Load(value.dump());
    }
    node[parts.back()] = leaf;
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace baton
