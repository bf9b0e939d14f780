#include "trainer/tools/v1_checkpoint.h"

#include <filesystem>
#include <utility>

#include "schema/atomic_file.h"
#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/ckpt/v1_model_config.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

TensorMap ReadAll(const std::string& path) {
  auto f = SafetensorsFile::Open(path);
  if (!f.ok())
    FailAt(__FILE__, __LINE__, kExitData, f.status().ToString(),
           "the checkpoint is damaged; upgrade another one");
  TensorMap out;
  for (const auto& t : (*f)->tensors()) {
    out[t.name] =
        torch::from_blob(const_cast<uint8_t*>((*f)->Data(t)), t.shape, ToTorchDtype(t.dtype))
            .clone();
  }
  return out;
}

// Refuses what a save refuses: a checkpoint vouches for finite state, and an upgrade makes one.
void CheckFinite(const TensorMap& map, const std::string& path) {
  for (const auto& [name, t] : map) {
    if (!t.is_floating_point()) continue;
    const int64_t bad = (~torch::isfinite(t)).sum().item<int64_t>();
    if (bad > 0) {
      BATON_FAIL(
          kExitData,
          path + ": tensor '" + name + "' holds " + std::to_string(bad) + " NaN/Inf value(s)",
          "a checkpoint holds finite state only; upgrade one from before the divergence");
    }
  }
}

}  // namespace

void CheckManifestVouches(const std::string& dir, const CheckpointManifest& m) {
  for (const char* need : {kWeightsFile, kModelConfigFile, kOptimizerFile, kStateFile}) {
    bool listed = false;
    for (const auto& f : m.files) listed = listed || f.path == need;
    if (!listed) {
      BATON_FAIL(
          kExitData,
          dir + "/" + kManifestName + " does not list " + need + ": its bytes cannot be checked",
          "the checkpoint is incomplete; upgrade another one");
    }
  }
  for (const auto& f : m.files) {  // never convert damaged bytes
    auto h = HashFile((fs::path(dir) / f.path).string());
    if (!h.ok() || h.value() != f.xxh3) {
      BATON_FAIL(kExitData, (fs::path(dir) / f.path).string() + ": hash differs from the manifest",
                 "the checkpoint is damaged; upgrade another one");
    }
  }
}

V1Checkpoint ReadV1Checkpoint(const std::string& dir) {
  V1Checkpoint v;
  v.d = DimsFromV1Config((fs::path(dir) / kModelConfigFile).string());
  v.weights_path = (fs::path(dir) / kWeightsFile).string();
  v.optimizer_path = (fs::path(dir) / kOptimizerFile).string();
  v.weights = ReadAll(v.weights_path);
  v.optimizer = ReadAll(v.optimizer_path);
  for (const auto& [path, map] :
       {std::pair<std::string, const TensorMap*>{v.weights_path, &v.weights},
        std::pair<std::string, const TensorMap*>{v.optimizer_path, &v.optimizer}}) {
    if (map->empty()) {
      BATON_FAIL(kExitData, path + ": holds no tensors",
                 "the checkpoint is incomplete; upgrade another one");
    }
  }
  CheckFinite(v.weights, v.weights_path);
  CheckFinite(v.optimizer, v.optimizer_path);
  v.dtype = v.weights.begin()->second.scalar_type();
  for (const auto& [name, t] : v.weights) {
    if (t.scalar_type() != v.dtype || !t.is_floating_point()) {
      BATON_FAIL(kExitData,
                 v.weights_path + ": tensor '" + name + "' is " + c10::toString(t.scalar_type()) +
                     ", the others " + c10::toString(v.dtype),
                 "a version-1 checkpoint holds its weights in one float dtype");
    }
  }
  const std::string state_path = (fs::path(dir) / kStateFile).string();
  auto state_text = ReadFile(state_path);
  if (!state_text.ok())
    FailAt(__FILE__, __LINE__, kExitData, state_text.status().ToString(),
           "the checkpoint is damaged or partly deleted; upgrade another one");
  v.state = nlohmann::ordered_json::parse(state_text.value(), nullptr, false);
  if (!v.state.is_object()) {
    BATON_FAIL(kExitData, state_path + ": not a JSON object",
               "the checkpoint is damaged; upgrade another one");
  }
  // More layers than tensors cannot be: bounds the key list below.
  if (v.d.layers > int64_t(v.weights.size())) {
    BATON_FAIL(kExitData,
               dir + "/" + kModelConfigFile + ": num_layers " + std::to_string(v.d.layers) +
                   " but " + v.weights_path + " holds " + std::to_string(v.weights.size()) +
                   " tensors",
               "the weights and config.json belong to different models");
  }
  return v;
}

}  // namespace baton
