#include "trainer/ckpt/checkpoint.h"

#include <xxhash.h>

#include <chrono>
#include <cinttypes>
#include <filesystem>

#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
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
                                        const CheckpointSection& retention) {
  std::vector<std::string> removed;
  int64_t kept_recent = 0;
  bool kept_finite = false;
  // Sizes only: hashing every old checkpoint on every save would cost more than the save.
  for (const auto& c : ListCheckpoints(checkpoints_dir, /*check_hashes=*/false)) {
    if (!c.valid) continue;  // invalid folders never count and are left for inspection
    const bool recent = kept_recent < retention.keep_last;
    const bool milestone = retention.keep_every > 0 && c.step % retention.keep_every == 0;
    // The newest checkpoint known to be finite survives even when newer ones are not (written
    // by an older build, or by hand): a diverged run can always go back to it.
    const bool newest_finite = c.finite && !kept_finite;
    if (c.finite) kept_finite = true;
    if (recent) ++kept_recent;
    if (recent || milestone || newest_finite) continue;
    std::error_code ec;
    fs::remove_all(c.path, ec);
    if (!ec) removed.push_back(c.path);
  }
  return removed;
}

}  // namespace baton
