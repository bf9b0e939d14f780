#include "orchestrator/http/run_profile.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "orchestrator/store/record_json.h"
#include "schema/config_keys.h"

using nlohmann::json;

namespace baton {

namespace {

struct Sums {
  int64_t micro_steps = 0, steps = 0, tokens = 0, peak_bytes = 0;
  double fwd_bwd_s = 0;
  std::set<int64_t> shapes;
};

json SumsJson(const Sums& s) {
  return json{{"micro_steps", s.micro_steps},
              {"steps", s.steps},
              {"tokens", s.tokens},
              {"fwd_bwd_s", JsonNumber(s.fwd_bwd_s)},
              {"tokens_per_s", JsonNumber(s.fwd_bwd_s > 0 ? double(s.tokens) / s.fwd_bwd_s : NAN)},
              {"peak_bytes", s.peak_bytes},
              {"shapes", s.shapes.size()}};
}

}  // namespace

double ModelFlopsPerToken(int64_t dim, int64_t layers, int64_t ffn_dim) {
  const double d = double(dim), l = double(layers), f = double(ffn_dim);
  return 6.0 * l * (6.0 * d * d + 2.0 * d * f);
}

ProfileModel ProfileModelFromConfig(const std::string& yaml_text) {
  ProfileModel m;
  const json keys = FlattenConfig(yaml_text);
  auto number = [&](const char* key) {
    if (!keys.contains(key) || !keys[key].is_string()) return 0.0;
    try {
      return std::stod(keys[key].get<std::string>());
    } catch (const std::exception&) {
      return 0.0;
    }
  };
  const double dim = number("model.dim"), layers = number("model.layers"),
               ffn = number("model.ffn_dim"), peak = number("train.device_peak_tflops");
  if (dim > 0 && layers > 0 && ffn > 0) {
    m.flops_per_token = ModelFlopsPerToken(int64_t(dim), int64_t(layers), int64_t(ffn));
  }
  if (peak > 0 && std::isfinite(peak)) m.peak_flops = peak * 1e12;
  return m;
}

json ProfileJson(const std::vector<MicrostepRecord>& micro,
                 const std::map<int64_t, int>& attempt_index, const ProfileModel& model) {
  std::map<int64_t, Sums> per_attempt;
  json steps = json::array();
  size_t listed_steps = 0;
  for (size_t i = 0; i < micro.size();) {
    // One optimizer step: its micro-steps are consecutive (attempt, step, micro order).
    size_t j = i;
    Sums step;
    while (j < micro.size() && micro[j].attempt_id == micro[i].attempt_id &&
           micro[j].step == micro[i].step) {
      const MicrostepRecord& m = micro[j];
      ++step.micro_steps;
      step.tokens += m.tokens;
      if (std::isfinite(m.fwd_bwd_s)) step.fwd_bwd_s += m.fwd_bwd_s;
      step.peak_bytes = std::max(step.peak_bytes, m.peak_bytes);
      step.shapes.insert(m.tokens);
      ++j;
    }
    step.steps = 1;
    Sums& a = per_attempt[micro[i].attempt_id];
    a.micro_steps += step.micro_steps;
    a.steps += 1;
    a.tokens += step.tokens;
    a.fwd_bwd_s += step.fwd_bwd_s;
    a.peak_bytes = std::max(a.peak_bytes, step.peak_bytes);
    a.shapes.insert(step.shapes.begin(), step.shapes.end());
    if (listed_steps++ < kMaxProfileSteps) {
      auto it = attempt_index.find(micro[i].attempt_id);
      json s = SumsJson(step);
      s.erase("steps");
      s["step"] = micro[i].step;
      s["attempt"] = it == attempt_index.end() ? 0 : it->second;
      steps.push_back(std::move(s));
    }
    i = j;
  }
  json attempts = json::array();
  for (const auto& [id, sums] : per_attempt) {
    auto it = attempt_index.find(id);
    json a = SumsJson(sums);
    a["attempt"] = it == attempt_index.end() ? 0 : it->second;
    const double tps = sums.fwd_bwd_s > 0 ? double(sums.tokens) / sums.fwd_bwd_s : NAN;
    const bool known = model.peak_flops > 0 && model.flops_per_token > 0 && std::isfinite(tps);
    a["mfu"] = known ? json(tps * model.flops_per_token / model.peak_flops) : json(nullptr);
    attempts.push_back(std::move(a));
  }
  return json{{"steps", std::move(steps)},
              {"steps_total", listed_steps},
              {"attempts", std::move(attempts)},
              {"model_flops_per_token",
               model.flops_per_token > 0 ? json(model.flops_per_token) : json(nullptr)},
              {"device_peak_flops", model.peak_flops > 0 ? json(model.peak_flops) : json(nullptr)}};
}

json FlattenConfig(const std::string& yaml_text) {
  json out = json::object();
  const Result<std::map<std::string, std::string>> keys = FlattenConfigKeys(yaml_text);
  if (!keys.ok()) return out;
  for (const auto& [key, value] : keys.value()) out[key] = value;
  return out;
}

}  // namespace baton
