#include "trainer/ckpt/checkpoint.h"

#include <xxhash.h>

#include <chrono>
#include <cinttypes>
#include <filesystem>

#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/keep_best.h"
#include "schema/storage_forecast.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

std::string FirstNonFinite(VideoActionModel* model, const AdamW& optimizer) {
  torch::NoGradGuard no_grad;
  auto finite = [](const torch::Tensor& t) { return torch::isfinite(t).all().item<bool>(); };
  if (model != nullptr) {
    for (const auto& p : (*model)->named_parameters()) {
      if (!finite(p.value())) return p.key();
    }
  }
  for (const auto& s : optimizer.state()) {
    if (!s.owned) continue;
    if (s.split && !finite(s.master)) return s.name;
    if (!finite(s.exp_avg)) return "exp_avg." + s.name;
    if (!finite(s.exp_avg_sq)) return "exp_avg_sq." + s.name;
  }
  return "";
}

nlohmann::ordered_json ModelConfigJson(const ModelDims& d) { return UpstreamConfigJson(d); }

std::string ConfigHash(const ModelDims& d) {
  const std::string text = ModelConfigJson(d).dump();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, XXH3_64bits(text.data(), text.size()));
  return hex;
}

std::vector<std::string> ApplyRetention(const std::string& checkpoints_dir,
                                        const RunConfig& config) {
  std::vector<std::string> removed;
  // Sizes only: hashing every old checkpoint on every save would cost more than the save.
  std::vector<CheckpointEntry> valid;
  for (auto& c : ListCheckpoints(checkpoints_dir, /*check_hashes=*/false)) {
    if (c.valid) valid.push_back(std::move(c));  // invalid folders never count and are left
  }
  const std::vector<bool> keep = RetentionKeeps(RetainedOnDisk(config, checkpoints_dir, valid),
                                                RetentionRuleOf(config.checkpoint));
  for (size_t i = 0; i < valid.size(); ++i) {
    if (keep[i]) continue;
    std::error_code ec;
    fs::remove_all(valid[i].path, ec);
    if (!ec) removed.push_back(valid[i].path);
  }
  return removed;
}

}  // namespace baton
