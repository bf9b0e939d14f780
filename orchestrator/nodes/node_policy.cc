#include "orchestrator/nodes/node_policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "orchestrator/store/store.h"

namespace baton {

Result<double> ParseDuration(const std::string& text, const std::string& what) {
  constexpr double kMaxDurationS = 365 * 24 * 3600.0;  // a year: longer is a typo
  const std::string bad = what + ": '" + text + "' is not a duration (like 90s, 15m, 6h, 2d)";
  if (text.empty()) return Status::InvalidArgument(bad);
  double unit = 1;
  std::string number = text;
  switch (text.back()) {
    case 's':
      unit = 1, number.pop_back();
      break;
    case 'm':
      unit = 60, number.pop_back();
      break;
    case 'h':
      unit = 3600, number.pop_back();
      break;
    case 'd':
      unit = 86400, number.pop_back();
      break;
    default:
      break;
  }
  if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos)
    return Status::InvalidArgument(bad);
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(v) || v <= 0)
    return Status::InvalidArgument(bad);
  if (v * unit > kMaxDurationS) return Status::InvalidArgument(bad + ": over 365 days");
  return v * unit;
}

std::string NodePolicyPath() {
  const char* v = std::getenv("BATON_NODES_CONFIG");
  return v != nullptr && *v != '\0' ? std::string(v) : BatonHome() + "/nodes.yaml";
}

namespace {

Status ReadPolicyKey(const std::string& path, const std::string& key, const YAML::Node& v,
                     NodePolicy* p, bool* defaults) {
  const std::string where = path + ": " + key;
  auto duration = [&](double* out) -> Status {
    Result<double> d = ParseDuration(v.IsScalar() ? v.Scalar() : "", where);
    if (!d.ok()) return Status::Config(d.status().message());
    *out = *d;
    return Status::Ok();
  };
  if (key == "window") return duration(&p->window_s);
  if (key == "ttl") return duration(&p->ttl_s);
  if (key == "probation") return duration(&p->probation_s);
  try {
    if (key == "exclude_after_incidents") {
      p->min_incidents = v.as<int64_t>();
      if (p->min_incidents < 1 || p->min_incidents > 1000)
        return Status::Config(where + ": " + v.Scalar() + " is not in [1, 1000]");
      return Status::Ok();
    }
    if (key == "max_excluded_fraction") {
      p->max_excluded_fraction = v.as<double>();
      if (!(p->max_excluded_fraction >= 0 && p->max_excluded_fraction <= 1))
        return Status::Config(where + ": " + v.Scalar() + " is not in [0, 1]");
      return Status::Ok();
    }
    if (key == "default_patterns") {
      *defaults = v.as<bool>();
      return Status::Ok();
    }
  } catch (const YAML::Exception&) {
    return Status::Config(where + ": '" + (v.IsScalar() ? v.Scalar() : "?") +
                          "' is not a value of the right type");
  }
  if (key == "patterns") {
    if (!v.IsSequence()) return Status::Config(where + ": must be a list of {kind, regex}");
    for (const YAML::Node& item : v) {
      if (!item.IsMap() || !item["kind"] || !item["regex"] || item.size() != 2 ||
          !item["kind"].IsScalar() || !item["regex"].IsScalar())
        return Status::Config(where + ": each item must be {kind: WORD, regex: RE2}");
      p->patterns.push_back({item["kind"].Scalar(), item["regex"].Scalar()});
    }
    return Status::Ok();
  }
  return Status::Config(where +
                        ": unknown key (known: exclude_after_incidents, window, ttl, "
                        "probation, max_excluded_fraction, default_patterns, patterns)");
}

}  // namespace

Result<NodePolicy> LoadNodePolicy(const std::string& path) {
  NodePolicy p;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return p;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Status::Io("cannot read the node policy " + path);
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return Status::Config(path + ": malformed YAML: " + e.what());
  }
  if (root.IsNull()) return p;
  if (!root.IsMap()) return Status::Config(path + ": must be a mapping of keys");
  bool defaults = true;
  p.patterns.clear();
  for (const auto& kv : root) {
    BATON_RETURN_IF_ERROR(ReadPolicyKey(path, kv.first.Scalar(), kv.second, &p, &defaults));
  }
  if (defaults) {
    std::vector<NodeFaultPattern> all = DefaultNodeFaultPatterns();
    all.insert(all.end(), p.patterns.begin(), p.patterns.end());
    p.patterns = std::move(all);
  }
  Result<LogPatterns> compiled = LogPatterns::Compile(p.patterns);
  if (!compiled.ok()) return compiled.status().Annotate(path);
  return p;
}

bool ExcludedAt(const NodeRecord& node, double now) {
  return node.excluded_at.has_value() && node.excluded_until.has_value() &&
         now < *node.excluded_until;
}

NodeVerdict JudgeNode(const NodeRecord& node, const std::vector<double>& incident_times, double now,
                      const NodePolicy& policy) {
  NodeVerdict v;
  if (ExcludedAt(node, now)) return v;  // still excluded: nothing to decide
  if (node.excluded_at.has_value()) {
    v.action = NodeVerdict::Action::kExpire;
    v.reason = "exclusion ended; re-admitted on probation";
    return v;  // incidents from before the re-admission no longer count
  }
  const double since = std::max(now - policy.window_s, node.admitted_at);
  for (double t : incident_times) {
    if (t > since) ++v.counted;
  }
  const bool probation = node.probation_until.has_value() && now < *node.probation_until;
  const int64_t needed = probation ? 1 : policy.min_incidents;
  if (v.counted < needed) return v;
  v.action = NodeVerdict::Action::kExclude;
  v.until = now + policy.ttl_s;
  char window[32];
  std::snprintf(window, sizeof window, "%.0f h", policy.window_s / 3600);
  v.reason = probation ? std::to_string(v.counted) + " incident(s) while on probation"
                       : std::to_string(v.counted) + " incidents within " + window;
  return v;
}

void ApplyVerdict(const NodeVerdict& verdict, double now, const NodePolicy& policy,
                  NodeRecord* node) {
  if (verdict.action == NodeVerdict::Action::kExclude) {
    node->excluded_at = now;
    node->excluded_until = verdict.until;
    node->excluded_by = "auto";
    node->exclusion_reason = verdict.reason;
  } else if (verdict.action == NodeVerdict::Action::kExpire) {
    node->admitted_at = node->excluded_until.value_or(now);
    node->probation_until = node->admitted_at + policy.probation_s;
    node->excluded_at.reset();
    node->excluded_until.reset();
  }
}

ExclusionPlan PlanExclusion(const std::vector<std::string>& excluded,
                            const std::vector<std::string>& partition_nodes, int64_t job_nodes,
                            double max_excluded_fraction) {
  ExclusionPlan plan;
  const std::set<std::string> known(partition_nodes.begin(), partition_nodes.end());
  const int64_t total = int64_t(known.size());
  // The epsilon keeps 0.1 x 10 at 1 (0.1 is not exact in binary).
  const int64_t cap = int64_t(std::floor(max_excluded_fraction * double(total) + 1e-9));
  const int64_t fit = std::max<int64_t>(0, total - job_nodes);
  for (const std::string& host : excluded) {
    if (known.count(host) == 0) {
      plan.dropped.push_back(host);
      continue;
    }
    const int64_t n = int64_t(plan.exclude.size());
    if (n >= fit) {
      plan.refused.push_back({host, "cannot exclude: job would not fit (it needs " +
                                        std::to_string(job_nodes) + " of the partition's " +
                                        std::to_string(total) + " nodes)"});
    } else if (n >= cap) {
      char pct[16];
      std::snprintf(pct, sizeof pct, "%g%%", max_excluded_fraction * 100);
      plan.refused.push_back({host, "cannot exclude: over the cap of " + std::string(pct) +
                                        " of the partition's " + std::to_string(total) +
                                        " nodes (" + std::to_string(cap) + ")"});
    } else {
      plan.exclude.push_back(host);
    }
  }
  return plan;
}

}  // namespace baton
