#include "trainer/ckpt/trainer_state.h"

#include <sstream>

#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "trainer/fail.h"

namespace baton {

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
    cmp("dataset fingerprint (meta/episodes.jsonl + meta/info.json + the eval: held-out set)",
        saved.dataset_fingerprint, now.dataset_fingerprint);
  }
  return diff;
}

void CheckTrainerStateRanges(const TrainerState& s, const std::string& path) {
  auto bad = [&](const std::string& key, int64_t v, const std::string& want) {
    BATON_FAIL(kExitData, path + ": \"" + key + "\" is " + std::to_string(v) + ", expected " + want,
               "the checkpoint's trainer state is damaged or was edited; resume from another "
               "checkpoint");
  };
  if (s.step < 0) bad("step", s.step, ">= 0");
  if (s.world_size < 1) bad("world_size", s.world_size, ">= 1");
  if (s.grad_accum < 1) bad("grad_accum", s.grad_accum, ">= 1");
  const DataCursor& c = s.sampler;
  if (c.batch_size < 1) bad("sampler.batch_size", c.batch_size, ">= 1");
  if (c.epoch < 0) bad("sampler.epoch", c.epoch, ">= 0");
  if (c.batch < 0) bad("sampler.batch", c.batch, ">= 0");
  if (c.origin_epoch < 0) bad("sampler.origin_epoch", c.origin_epoch, ">= 0");
  // Every step consumes grad_accum micro-batches of the plan, counted from its origin (the
  // run's start, or the last change of rank count), so the index never passes step x grad_accum.
  int64_t most = 0;
  if (__builtin_mul_overflow(s.step, s.grad_accum, &most)) most = INT64_MAX;
  if (c.micro_index < 0 || c.micro_index > most) {
    bad("sampler.micro_index", c.micro_index, "0 to step x grad_accum = " + std::to_string(most));
  }
  if (c.transition.epoch < -1) bad("sampler.transition.epoch", c.transition.epoch, ">= -1");
  for (const auto& rank : c.transition.batches) {
    for (const auto& batch : rank) {
      for (int64_t e : batch) {
        if (e < 0) bad("sampler.transition.batches[..]", e, "episode indices >= 0");
      }
    }
  }
}

}  // namespace baton
