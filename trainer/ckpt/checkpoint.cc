#include "trainer/ckpt/checkpoint.h"

#include <xxhash.h>

#include <unistd.h>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <filesystem>
#include <map>
#include <sstream>

#include "schema/atomic_file.h"
#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

// Tensors held on the CPU and contiguous for the life of a write.
struct HeldTensors {
  std::vector<torch::Tensor> keep;
  std::vector<StTensorRef> refs;
  void Add(const std::string& name, const torch::Tensor& t) {
    keep.push_back(t.detach().to(torch::kCPU).contiguous());
    refs.push_back({name, ToStDType(keep.back().scalar_type()), keep.back().sizes().vec(),
                    keep.back().data_ptr()});
  }
};

void CheckOk(const Status& st, const std::string& hint) {
  if (!st.ok()) FailAt(__FILE__, __LINE__, st, hint);
}

// A shape that differs from the model's is a config error (78) only where the checkpoint's
// config.json has not been found equal to the run's (a weights-only resume); after that check,
// and always for the optimizer state, the file contradicts its own checkpoint: damaged (65).
enum class ShapeMismatch { kConfig, kDamaged };

torch::Tensor ReadTensor(const SafetensorsFile& f, const std::string& name,
                         const std::vector<int64_t>& shape, ShapeMismatch mismatch) {
  const StTensorInfo* t = f.Find(name);
  if (t == nullptr) {
    BATON_FAIL(kExitData, f.path() + ": tensor '" + name + "' is missing",
               "the checkpoint was written by another model or is damaged");
  }
  if (t->shape != shape) {
    if (mismatch == ShapeMismatch::kDamaged) {
      BATON_FAIL(kExitData,
                 f.path() + ": tensor '" + name + "' has shape " + ShapeString(t->shape) +
                     " but the model (and the checkpoint's own config.json) has " +
                     ShapeString(shape),
                 "the checkpoint is damaged; resume from another one (--resume auto skips "
                 "invalid ones)");
    }
    BATON_FAIL(kExitConfig,
               f.path() + ": tensor '" + name + "' has shape " + ShapeString(t->shape) +
                   " but the model has " + ShapeString(shape),
               "the checkpoint belongs to a model of other sizes; check model.* in the config");
  }
  return torch::from_blob(const_cast<uint8_t*>(f.Data(*t)), t->shape, ToTorchDtype(t->dtype))
      .clone();
}

// The numbers of a trainer state that index into the data plan and the schedule, in range: a
// hand-edited or damaged trainer_state.json is a data error naming the key (the manifest hashes
// only vouch for what the save wrote, and a re-hashed edit passes them).
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

std::shared_ptr<const SafetensorsFile> OpenOrFail(const std::string& path) {
  auto r = SafetensorsFile::Open(path);
  if (!r.ok()) {
    FailAt(__FILE__, __LINE__, kExitData, r.status().ToString(),
           "the checkpoint is damaged; use --resume auto to fall back to an older one");
  }
  return r.value();
}

// The optimizer state of a checkpoint folder: optimizer.safetensors, or the files its
// optimizer.safetensors.index.json names, each opened once.
class OptimizerFiles {
 public:
  explicit OptimizerFiles(const std::string& dir) : dir_(dir) {
    const fs::path index = fs::path(dir) / kOptimizerIndexFile;
    std::error_code ec;
    if (!fs::exists(index, ec)) return;
    map_ = ReadWeightMap(index.string());
    indexed_ = true;
  }

  const SafetensorsFile& For(const std::string& tensor) {
    std::string file = kOptimizerFile;
    if (indexed_) {
      auto it = map_.find(tensor);
      if (it == map_.end()) {
        BATON_FAIL(kExitData,
                   dir_ + "/" + kOptimizerIndexFile + ": tensor '" + tensor + "' is missing",
                   "the checkpoint was written by another model or is damaged");
      }
      file = it->second;
    }
    auto& f = open_[file];
    if (!f) f = OpenOrFail((fs::path(dir_) / file).string());
    return *f;
  }

 private:
  std::string dir_;
  bool indexed_ = false;
  std::map<std::string, std::string> map_;
  std::map<std::string, std::shared_ptr<const SafetensorsFile>> open_;
};

}  // namespace

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

namespace {

// The moments and step counts of the parameters this rank owns, into one safetensors file.
void WriteOptimizerFile(const std::string& path, const AdamW& optimizer) {
  HeldTensors o;
  for (const auto& s : optimizer.state()) {
    if (!s.owned) continue;
    o.Add("exp_avg." + s.name, s.exp_avg);
    o.Add("exp_avg_sq." + s.name, s.exp_avg_sq);
    o.Add("step." + s.name, torch::full({1}, s.step, torch::kInt64));
  }
  CheckOk(WriteSafetensors(path, o.refs), "check disk space");
}

}  // namespace

SaveResult SaveCheckpoint(const std::string& checkpoints_dir, VideoActionModel& model,
                          const AdamW& optimizer, const TrainerState& state,
                          const CheckpointSection& retention, const SaveHooks& hooks,
                          const SaveTeam* team) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool sharded = team != nullptr && team->world > 1;
  const bool leader = !sharded || team->rank == 0;
  const std::string name = kCheckpointPrefix + std::to_string(state.step);
  // A checkpoint vouches for its state: never one that would spread NaN into every resume. Every
  // rank checks the moments it holds (rank 0 also the weights), and all agree before writing.
  const std::string bad = FirstNonFinite(leader ? &model : nullptr, optimizer);
  const bool any_bad = sharded ? team->any_rank(!bad.empty()) : !bad.empty();
  if (any_bad) {
    BATON_FAIL(kExitDiverged,
               "refusing to write " + name + ": " +
                   (bad.empty() ? std::string("another rank's optimizer state") : "tensor " + bad) +
                   " holds NaN/Inf (training diverged)",
               "lower optim.lr or check the data (baton-train data-check); the last finite "
               "checkpoint is kept");
  }
  const fs::path final_dir = fs::path(checkpoints_dir) / name;
  const fs::path partial = final_dir.string() + kPartialSuffix;
  std::error_code ec;
  auto make_folder = [&]() -> std::string {
    if (!leader) return "";
    fs::create_directories(checkpoints_dir, ec);
    // Only this save writes here, so any .partial is a save that was cut short.
    for (const auto& e : fs::directory_iterator(checkpoints_dir, ec)) {
      const std::string n = e.path().filename().string();
      if (n.size() > 8 && n.compare(n.size() - 8, 8, kPartialSuffix) == 0)
        fs::remove_all(e.path(), ec);
    }
    fs::create_directories(partial / "transformer", ec);
    if (ec)
      BATON_FAIL(kExitIo, partial.string() + ": cannot create: " + ec.message(),
                 "check disk space and permissions");
    return "";
  };
  std::vector<std::string> files;
  // A rank that fails in its part (a write refused) makes every rank fail alike, before anything
  // is vouched for, instead of leaving the others waiting for it.
  if (sharded) {
    team->agreed("while creating the checkpoint folder", make_folder);
  } else {
    make_folder();
  }
  auto part = [&]() -> std::string {
    if (sharded) {
      // Each rank writes what it owns, in parallel; the index says where each tensor is.
      WriteOptimizerFile((partial / OptimizerShardFile(team->rank, team->world)).string(),
                         optimizer);
      if (hooks.mid_file) hooks.mid_file();
    }
    if (leader) {
      // transformer/: what upstream loads (export dtype, sharded above the limit). When that is not
      // the master dtype, the exact master weights go beside it, so a resume stays bit for bit.
      files = WriteTransformerFolder((partial / "transformer").string(), model,
                                     ExportDtype(retention.export_dtype), retention.max_shard_bytes,
                                     partial.string());
      const auto master_dtype = model->parameters().front().scalar_type();
      if (ExportDtype(retention.export_dtype) != master_dtype) {
        HeldTensors w;
        for (const auto& p : model->named_parameters()) w.Add(p.key(), p.value());
        CheckOk(WriteSafetensors((partial / kMasterWeightsFile).string(), w.refs),
                "check disk space");
        files.push_back(kMasterWeightsFile);
      }
      if (sharded) {
        nlohmann::ordered_json map = nlohmann::ordered_json::object();
        size_t i = 0;
        for (const auto& s : optimizer.state()) {
          const std::string file = OptimizerShardFile(team->owner.at(i++), team->world);
          for (const char* k : {"exp_avg.", "exp_avg_sq.", "step."}) map[k + s.name] = file;
        }
        nlohmann::ordered_json index{{"metadata", {{"world_size", team->world}}},
                                     {"weight_map", map}};
        CheckOk(WriteTextAtomic((partial / kOptimizerIndexFile).string(), index.dump(2) + "\n"),
                "check disk space");
        files.push_back(kOptimizerIndexFile);
        for (int64_t r = 0; r < team->world; ++r)
          files.push_back(OptimizerShardFile(r, team->world));
      } else {
        if (hooks.mid_file) hooks.mid_file();
        WriteOptimizerFile((partial / kOptimizerFile).string(), optimizer);
        files.push_back(kOptimizerFile);
      }
      CheckOk(WriteTextAtomic((partial / kStateFile).string(), state.ToJson().dump(2) + "\n"),
              "check disk space");
      files.push_back(kStateFile);
    }
    return std::string();
  };
  // Every rank's file is durable before the manifest vouches for it.
  if (sharded) {
    team->agreed("while writing its part of the checkpoint", part);
  } else {
    part();
  }
  SaveResult r;
  if (!leader) return r;
  if (hooks.before_manifest) hooks.before_manifest();
  CheckpointManifest m;
  m.step = state.step;
  m.kind = "full";
  m.world_size = state.world_size;
  m.config_hash = state.config_hash;
  m.finite = true;  // checked above
  CheckOk(WriteManifest(partial.string(), m, files), "check disk space");
  CheckOk(FsyncDir((partial / "transformer").string()), "");
  CheckOk(FsyncDir(partial.string()), "");
  if (hooks.before_rename) hooks.before_rename();
  if (fs::exists(final_dir, ec)) {  // re-saving a step (a resume redid it): replace whole
    const fs::path old = final_dir.string() + ".old." + std::to_string(::getpid());
    fs::rename(final_dir, old, ec);
    fs::rename(partial, final_dir, ec);
    fs::remove_all(old);
  } else {
    fs::rename(partial, final_dir, ec);
  }
  if (ec) BATON_FAIL(kExitIo, final_dir.string() + ": rename failed: " + ec.message(), "");
  CheckOk(FsyncDir(checkpoints_dir), "");

  r.path = final_dir.string();
  for (const auto& f : files) r.bytes += int64_t(fs::file_size(final_dir / f, ec));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ApplyRetention(checkpoints_dir, retention);
  return r;
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

TrainerState LoadCheckpoint(const std::string& dir, VideoActionModel& model, AdamW* optimizer,
                            LoadMode mode) {
  const bool has_manifest = fs::exists(fs::path(dir) / kManifestName);
  if (mode == LoadMode::kFull || has_manifest) {
    const Status st = VerifyCheckpoint(dir);
    if (!st.ok())
      FailAt(__FILE__, __LINE__, kExitData, st.ToString(),
             "resume from another checkpoint (--resume auto skips invalid ones)");
  }
  TrainerState state;
  const fs::path state_path = fs::path(dir) / kStateFile;
  if (mode == LoadMode::kFull) {
    // The model must match exactly: name every differing key.
    auto text = ReadFile((fs::path(dir) / kModelConfigFile).string());
    if (!text.ok()) FailAt(__FILE__, __LINE__, kExitData, text.status().ToString(), "");
    const auto saved = nlohmann::json::parse(text.value(), nullptr, false);
    const auto mine = nlohmann::json(ModelConfigJson(model->dims()));
    std::string diff;
    for (auto it = mine.begin(); it != mine.end(); ++it) {
      if (!saved.is_object() || !saved.contains(it.key()) || saved[it.key()] != *it) {
        diff +=
            (diff.empty() ? "" : ", ") + it.key() + " " +
            (saved.is_object() && saved.contains(it.key()) ? saved[it.key()].dump() : "missing") +
            " vs " + it->dump();
      }
    }
    if (!diff.empty()) {
      BATON_FAIL(kExitConfig,
                 dir + " was written by another model config: " + diff + " (checkpoint vs run)",
                 "fix model.* in the config (or model.init_from), or start a new run folder");
    }
    auto st_text = ReadFile(state_path.string());
    if (!st_text.ok()) FailAt(__FILE__, __LINE__, kExitData, st_text.status().ToString(), "");
    try {
      state = TrainerState::FromJson(nlohmann::json::parse(st_text.value()));
    } catch (const std::exception& e) {
      BATON_FAIL(kExitData, state_path.string() + ": unreadable trainer state: " + e.what(), "");
    }
    CheckTrainerStateRanges(state, state_path.string());
  } else {
    const int64_t step = CheckpointStepFromName(fs::path(dir).filename().string());
    if (step < 0) {
      BATON_FAIL(
          kExitConfig,
          dir + ": a weights-only resume takes step0 from a folder named checkpoint_step_<N>",
          "rename the folder or pass an explicit checkpoint_step_<N> path");
    }
    state.step = step;
  }

  torch::NoGradGuard no_grad;
  std::error_code ec;
  if (fs::exists(fs::path(dir) / kMasterWeightsFile, ec)) {
    auto weights = OpenOrFail((fs::path(dir) / kMasterWeightsFile).string());
    const ShapeMismatch mismatch =
        mode == LoadMode::kFull ? ShapeMismatch::kDamaged : ShapeMismatch::kConfig;
    for (auto& p : model->named_parameters()) {
      p.value().copy_(ReadTensor(*weights, p.key(), p.value().sizes().vec(), mismatch));
    }
  } else {
    LoadTransformerWeights((fs::path(dir) / "transformer").string(), model);
  }
  if (mode == LoadMode::kFull && optimizer != nullptr) {
    // One file, or one per rank of the run that saved it: any rank count can read either, each
    // rank only the moments it owns now (and every step count).
    OptimizerFiles files(dir);
    for (auto& s : optimizer->state()) {
      const std::vector<int64_t> shape = s.param.sizes().vec();
      const auto damaged = ShapeMismatch::kDamaged;
      if (s.owned) {
        s.exp_avg.copy_(
            ReadTensor(files.For("exp_avg." + s.name), "exp_avg." + s.name, shape, damaged));
        s.exp_avg_sq.copy_(
            ReadTensor(files.For("exp_avg_sq." + s.name), "exp_avg_sq." + s.name, shape, damaged));
      }
      s.step =
          ReadTensor(files.For("step." + s.name), "step." + s.name, {1}, damaged).item<int64_t>();
    }
  }
  return state;
}

}  // namespace baton
