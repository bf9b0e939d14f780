#include "trainer/ckpt/v1_model_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "schema/atomic_file.h"
#include "schema/exit_codes.h"
#include "trainer/fail.h"

namespace baton {

namespace {

// Sizes are bounded before anything of their size exists (the model, the proj_out permutation);
// whether the tensors have them is checked after the renaming, against UpstreamParameterShapes.
constexpr int64_t kMaxSize = (int64_t(1) << 31) - 1;

}  // namespace

ModelDims DimsFromV1Config(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok())
    BATON_FAIL(kExitData, path + ": unreadable: " + text.status().message(),
               "the checkpoint is damaged or partly deleted; upgrade another one");
  const auto j = nlohmann::json::parse(text.value(), nullptr, false);
  if (!j.is_object())
    BATON_FAIL(kExitData, path + ": not a JSON object",
               "the checkpoint is damaged; upgrade another one");
  auto size = [&](const char* key) -> int64_t {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 1 ||
        j[key].get<int64_t>() > kMaxSize) {
      BATON_FAIL(kExitData,
                 path + ": not a version-1 baton model config: " + key +
                     " must be an integer in [1, " + std::to_string(kMaxSize) + "], got " +
                     (j.contains(key) ? j[key].dump() : "nothing"),
                 "ckpt-upgrade reads version-1 checkpoints written by baton-train");
    }
    return j[key].get<int64_t>();
  };
  auto real = [&](const char* key, double lo, double hi) -> double {
    if (!j.contains(key) || !j[key].is_number() || !std::isfinite(j[key].get<double>()) ||
        j[key].get<double>() < lo || j[key].get<double>() > hi || j[key].get<double>() == 0) {
      BATON_FAIL(kExitData,
                 path + ": not a version-1 baton model config: " + key + " out of range, got " +
                     (j.contains(key) ? j[key].dump() : "nothing"),
                 "ckpt-upgrade reads version-1 checkpoints written by baton-train");
    }
    return j[key].get<double>();
  };
  ModelDims d;
  d.channels = size("in_channels");
  d.patch = size("patch_size");
  d.action_dim = size("action_dim");
  d.action_steps = size("action_steps");
  d.text_dim = size("text_dim");
  d.dim = size("dim");
  d.heads = size("num_heads");
  d.layers = size("num_layers");
  d.ffn_dim = size("ffn_dim");
  d.freq_dim = size("freq_dim");
  d.rope_theta = real("rope_theta", 1.0, 1e300);
  d.eps = real("eps", 0.0, 1.0);
  if (d.dim % d.heads != 0 || d.channels * d.patch > kMaxSize ||
      d.channels * d.patch * d.patch > kMaxSize) {
    BATON_FAIL(kExitData,
               path + ": dim " + std::to_string(d.dim) + " / num_heads " + std::to_string(d.heads) +
                   " / in_channels x patch_size^2 do not make a model",
               "ckpt-upgrade reads version-1 checkpoints written by baton-train");
  }
  d.zero_init = false;
  return d;
}

}  // namespace baton
