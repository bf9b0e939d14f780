#include "trainer/ckpt/checkpoint.h"

#include <xxhash.h>

#include <chrono>
#include <cinttypes>
#include <filesystem>
#include <sstream>

#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

nlohmann::json TrainerState::ToJson() const {
  nlohmann::ordered_json lr_json = lr.ToJson();
  lr_json["last_lr"] = last_lr;
  return nlohmann::ordered_json{
      {"format_version", kCheckpointFormatVersion},
      {"step", step},
      {"sampler", sampler.ToJson()},
      {"grad_accum", grad_accum},
      {"world_size", world_size},
      {"rng",
       {{"scheme", "philox4x32-10 counter streams keyed by (seed, purpose, step, episode)"},
        {"seed", seed}}},
      {"lr_schedule", lr_json},
      {"config_hash", config_hash},
      {"dtype", dtype},
      {"pad_multiple", pad_multiple},
      {"data", {{"path", data_path}, {"fingerprint", dataset_fingerprint}}}};
}

TrainerState TrainerState::FromJson(const nlohmann::json& j) {
  TrainerState s;
  s.step = j.at("step").get<int64_t>();
  s.sampler = DataCursor::FromJson(j.at("sampler"));
  s.grad_accum = j.at("grad_accum").get<int64_t>();
  s.world_size = j.at("world_size").get<int64_t>();
  s.seed = j.at("rng").at("seed").get<int64_t>();
  s.lr = LrSchedule::FromJson(j.at("lr_schedule"));
  s.last_lr = j.at("lr_schedule").at("last_lr").get<double>();
  s.config_hash = j.at("config_hash").get<std::string>();
  s.dtype = j.at("dtype").get<std::string>();
  s.pad_multiple = j.value("pad_multiple", int64_t{0});
  if (j.contains("data") && j["data"].is_object()) {
    s.data_path = j["data"].value("path", "");
    s.dataset_fingerprint = j["data"].value("fingerprint", "");
  }
  return s;
}

std::vector<std::string> ExactResumeDifferences(const TrainerState& saved,
                                                const TrainerState& now) {
  std::vector<std::string> diff;
  auto cmp = [&](const char* key, const auto& a, const auto& b) {
    if (a == b) return;
    std::ostringstream line;
    line << key << ": " << a << " (checkpoint) vs " << b << " (run)";
    diff.push_back(line.str());
  };
  cmp("run.seed", saved.seed, now.seed);
  cmp("data.plan", saved.sampler.plan, now.sampler.plan);
  cmp("train.dtype", saved.dtype, now.dtype);
  cmp("data.batch_size", saved.sampler.batch_size, now.sampler.batch_size);
  cmp("optim.grad_accum", saved.grad_accum, now.grad_accum);
  // Recorded since the same-run check exists; older checkpoints leave them empty.
  if (saved.pad_multiple > 0) cmp("data.pad_multiple", saved.pad_multiple, now.pad_multiple);
  if (!saved.data_path.empty()) cmp("data.path", saved.data_path, now.data_path);
  if (!saved.dataset_fingerprint.empty()) {
    cmp("dataset fingerprint (meta/episodes.jsonl + meta/info.json)", saved.dataset_fingerprint,
        now.dataset_fingerprint);
  }
  return diff;
}

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
