// LoadCheckpoint: verify and read in one pass over the bytes.
//
// The manifest's structure, sizes and links are checked first (VerifyCheckpoint without hashes);
// the small files (config.json, trainer_state.json, the indexes) are hashed before they are
// parsed. Every tensor file this rank needs is then read once, front to back, straight into the
// parameters and moments, and hashed on the way (tensor_file_io.h); a file whose hash differs
// from the manifest's fails the load (65) before any step runs. The files no rank reads (the
// transformer/ export beside master weights) are hashed by one rank each, by turn, so the
// ranks together verify every byte; the caller's agreement makes a failure on one rank every
// rank's. Each rank reads every weight (it holds the whole model) and the files that hold the
// moments it owns now, whatever the rank count that wrote them.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "schema/atomic_file.h"
#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/ckpt/tensor_file_io.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

constexpr const char* kDamagedHint =
    "the checkpoint is damaged; resume from another one (--resume auto skips invalid ones)";

// Files at most this large are hashed up front by every rank (they are parsed before the tensors).
constexpr uint64_t kSmallFile = uint64_t(1) << 20;

// Past a few threads the copy out of the page cache is bound by memory bandwidth, not CPU.
constexpr int kMaxReadThreads = 4;

// A shape that differs from the model's is a config error (78) only where the checkpoint's
// config.json has not been found equal to the run's (a weights-only resume); after that check,
// and always for the optimizer state, the file contradicts its own checkpoint: damaged (65).
enum class ShapeMismatch { kConfig, kDamaged };

// Where a tensor of the checkpoint goes.
struct Target {
  torch::Tensor dst;
  ShapeMismatch mismatch = ShapeMismatch::kDamaged;
  bool found = false;
};

class CheckpointReader {
 public:
  CheckpointReader(const std::string& dir, const CheckpointManifest* manifest, LoadShare share)
      : dir_(dir), share_(share) {
    if (manifest == nullptr) return;
    for (const auto& f : manifest->files) listed_.push_back(f);
  }

  // Hashes every small listed file now, on every rank: they are parsed before the tensors.
  void CheckSmallFiles() {
    for (const auto& f : listed_) {
      if (f.bytes > kSmallFile) continue;
      auto h = HashFile((fs::path(dir_) / f.path).string());
      if (!h.ok()) FailAt(__FILE__, __LINE__, kExitData, h.status().ToString(), kDamagedHint);
      Compare(f, {f.bytes, h.value()});
    }
  }

  // Reads the tensor file `rel` once into `targets` (by name), hashing it. `index` (tensor name
  // -> file, relative to the folder; may be null) must place every tensor of the file there.
  // `strict`: a tensor of the file that is not a target is an error (weights).
  void Read(const std::string& rel, std::map<std::string, Target>& targets,
            const std::map<std::string, std::string>* index, bool strict) {
    const std::string path = (fs::path(dir_) / rel).string();
    auto file = SafetensorsFile::Open(path);
    if (!file.ok()) FailAt(__FILE__, __LINE__, kExitData, file.status().ToString(), kDamagedHint);
    std::vector<std::pair<torch::Tensor, torch::Tensor>> pending;  // (read into, copy to)
    for (const auto& t : file.value()->tensors()) {
      if (index != nullptr) {
        auto it = index->find(t.name);
        if (it == index->end() || it->second != rel) {
          BATON_FAIL(kExitData,
                     path + " holds tensor '" + t.name + "', which the index places " +
                         (it == index->end() ? std::string("nowhere") : "in " + it->second),
                     kDamagedHint);
        }
      }
      auto it = targets.find(t.name);
      if (it == targets.end()) {
        if (strict) {
          BATON_FAIL(kExitData, path + ": unexpected tensor '" + t.name + "'",
                     "not a parameter of the model its config.json describes; " +
                         std::string(kDamagedHint));
        }
        continue;
      }
      Target& target = it->second;
      if (t.shape != target.dst.sizes().vec()) {
        const std::string what =
            path + ": tensor '" + t.name + "' has shape " + ShapeString(t.shape) + " but the model";
        if (target.mismatch == ShapeMismatch::kDamaged) {
          BATON_FAIL(kExitData,
                     what + " (and the checkpoint's own config.json) has " +
                         ShapeString(target.dst.sizes().vec()),
                     kDamagedHint);
        }
        BATON_FAIL(kExitConfig, what + " has " + ShapeString(target.dst.sizes().vec()),
                   "the checkpoint belongs to a model of other sizes; check model.* in the config");
      }
      target.found = true;
      const torch::Tensor& dst = target.dst;
      if (ToTorchDtype(t.dtype) == dst.scalar_type() && dst.device().is_cpu() &&
          dst.is_contiguous()) {
        into_[&t] = dst.data_ptr();  // straight into the parameter or moment
      } else {
        pending.push_back(
            {torch::empty(t.shape, torch::TensorOptions().dtype(ToTorchDtype(t.dtype))), dst});
        into_[&t] = pending.back().first.data_ptr();
      }
    }
    auto d = ReadHashedSafetensors(
        *file.value(),
        [&](const StTensorInfo& t) -> void* {
          auto it = into_.find(&t);
          return it == into_.end() ? nullptr : it->second;
        },
        std::clamp(share_.threads, 1, kMaxReadThreads));
    into_.clear();
    if (!d.ok()) FailAt(__FILE__, __LINE__, kExitData, d.status().ToString(), kDamagedHint);
    for (const auto& f : listed_) {
      if (f.path == rel) Compare(f, d.value());
    }
    for (auto& [from, to] : pending) to.copy_(from);
    verified_.insert(rel);
  }

  // Copies the named tensors of `rel` (step counts: a few bytes of a file another rank reads
  // whole) without reading the rest; the file's hash is checked by the rank whose turn it is.
  void Peek(const std::string& rel, const std::vector<std::string>& names,
            std::map<std::string, Target>& targets) {
    const std::string path = (fs::path(dir_) / rel).string();
    auto file = SafetensorsFile::Open(path);
    if (!file.ok()) FailAt(__FILE__, __LINE__, kExitData, file.status().ToString(), kDamagedHint);
    for (const auto& name : names) {
      const StTensorInfo* t = file.value()->Find(name);
      if (t == nullptr) continue;  // reported as missing by the caller
      Target& target = targets.at(name);
      if (t->shape != target.dst.sizes().vec()) {
        BATON_FAIL(kExitData,
                   path + ": tensor '" + name + "' has shape " + ShapeString(t->shape) +
                       " but the model (and the checkpoint's own config.json) has " +
                       ShapeString(target.dst.sizes().vec()),
                   kDamagedHint);
      }
      target.dst.copy_(torch::from_blob(const_cast<uint8_t*>(file.value()->Data(*t)), t->shape,
                                        ToTorchDtype(t->dtype)));
      target.found = true;
    }
  }

  // Hashes the listed files no read covered, one rank each by turn: a per-rank file
  // (...-0000k-of-0000n) is rank k-1's turn (modulo the ranks now), so on the rank count that
  // wrote it the rank that read it whole is the one; others by their place in the manifest.
  void VerifyRest() {
    static const std::regex kNumbered("-([0-9]{5})-of-[0-9]{5}\\.safetensors$");
    for (size_t i = 0; i < listed_.size(); ++i) {
      const ManifestFile& f = listed_[i];
      std::smatch m;
      const int64_t turn =
          std::regex_search(f.path, m, kNumbered) ? std::stoll(m[1]) - 1 : int64_t(i);
      if (verified_.count(f.path) || turn % share_.world != share_.rank) continue;
      auto h = HashFile((fs::path(dir_) / f.path).string());
      if (!h.ok()) FailAt(__FILE__, __LINE__, kExitData, h.status().ToString(), kDamagedHint);
      Compare(f, {f.bytes, h.value()});
    }
  }

  bool verifying() const { return !listed_.empty(); }

 private:
  void Compare(const ManifestFile& f, const FileDigest& d) {
    const std::string path = (fs::path(dir_) / f.path).string();
    if (d.bytes != f.bytes) {
      BATON_FAIL(kExitData,
                 path + ": size " + std::to_string(d.bytes) + " differs from the manifest's " +
                     std::to_string(f.bytes) + " (truncated or rewritten)",
                 kDamagedHint);
    }
    if (d.xxh3 != f.xxh3) {
      BATON_FAIL(kExitData,
                 path + ": content hash " + d.xxh3 + " differs from the manifest's " + f.xxh3 +
                     " (corrupted)",
                 kDamagedHint);
    }
    verified_.insert(f.path);
  }

  std::string dir_;
  LoadShare share_;
  std::vector<ManifestFile> listed_;
  std::set<std::string> verified_;
  std::map<const StTensorInfo*, void*> into_;
};

// A diffusers-style index's weight_map with every file made relative to the checkpoint folder.
std::map<std::string, std::string> IndexRelativeToFolder(const std::string& dir,
                                                         const std::string& index_rel) {
  const fs::path parent = fs::path(index_rel).parent_path();
  std::map<std::string, std::string> out;
  for (const auto& [k, file] : ReadWeightMap((fs::path(dir) / index_rel).string())) {
    out[k] = (parent / file).lexically_normal().string();
  }
  return out;
}

// Reads `targets` from one file or from the files `index_rel` names; each file once. A target
// the files do not hold is an error naming the file it should be in.
void ReadTargets(CheckpointReader& reader, const std::string& dir, const std::string& single_rel,
                 const std::string& index_rel, std::map<std::string, Target>& targets,
                 bool strict) {
  std::error_code ec;
  const bool indexed = !index_rel.empty() && fs::exists(fs::path(dir) / index_rel, ec);
  std::map<std::string, std::string> index;
  std::vector<std::string> files;
  if (indexed) {
    index = IndexRelativeToFolder(dir, index_rel);
    std::set<std::string> need;
    for (const auto& [name, t] : targets) {
      auto it = index.find(name);
      if (it == index.end()) {
        BATON_FAIL(kExitData, dir + "/" + index_rel + ": tensor '" + name + "' is missing",
                   "the checkpoint was written by another model or is damaged");
      }
      need.insert(it->second);
    }
    // Weights: every file of the index (each holds only model tensors); moments: the ones named.
    if (strict) {
      for (const auto& [name, file] : index) need.insert(file);
    }
    files.assign(need.begin(), need.end());
  } else {
    files.push_back(single_rel);
  }
  for (const auto& f : files) {
    // A file this rank needs only step counts from is peeked at, not read whole.
    std::vector<std::string> small;
    bool whole = strict || !indexed;
    for (const auto& [name, t] : targets) {
      if (index.count(name) == 0 || index.at(name) != f) continue;
      if (name.rfind("step.", 0) == 0) {
        small.push_back(name);
      } else {
        whole = true;
      }
    }
    if (whole) {
      reader.Read(f, targets, indexed ? &index : nullptr, strict);
    } else {
      reader.Peek(f, small, targets);
    }
  }
  for (const auto& [name, t] : targets) {
    if (t.found) continue;
    const std::string file = indexed ? index.at(name) : single_rel;
    BATON_FAIL(kExitData, (fs::path(dir) / file).string() + ": tensor '" + name + "' is missing",
               "the checkpoint was written by another model or is damaged");
  }
}

// The manifest a full load (or any load of a folder that has one) goes by, after the folder's
// structure, sizes and links were checked; the hashes are checked while reading.
std::optional<CheckpointManifest> VerifiedManifest(const std::string& dir, LoadMode mode) {
  std::error_code ec;
  const bool has_manifest = fs::exists(fs::path(dir) / kManifestName, ec);
  if (mode != LoadMode::kFull && !has_manifest) return std::nullopt;
  const Status st = VerifyCheckpoint(dir, /*check_hashes=*/false);
  if (!st.ok())
    FailAt(__FILE__, __LINE__, kExitData, st.ToString(),
           "resume from another checkpoint (--resume auto skips invalid ones)");
  auto m = ReadManifest(dir);
  if (!m.ok()) FailAt(__FILE__, __LINE__, kExitData, m.status().ToString(), kDamagedHint);
  return m.value();
}

// The model must match exactly: name every differing key.
void CheckSameModel(const std::string& dir, VideoActionModel& model) {
  auto text = ReadFile((fs::path(dir) / kModelConfigFile).string());
  if (!text.ok())
    FailAt(__FILE__, __LINE__, kExitData, text.status().ToString(),
           "the checkpoint is damaged or partly deleted; resume from another one (baton-train "
           "ckpt verify)");
  const auto saved = nlohmann::json::parse(text.value(), nullptr, false);
  const auto mine = nlohmann::json(ModelConfigJson(model->dims()));
  std::string diff;
  for (auto it = mine.begin(); it != mine.end(); ++it) {
    if (!saved.is_object() || !saved.contains(it.key()) || saved[it.key()] != *it) {
      diff += (diff.empty() ? "" : ", ") + it.key() + " " +
              (saved.is_object() && saved.contains(it.key()) ? saved[it.key()].dump() : "missing") +
              " vs " + it->dump();
    }
  }
  if (!diff.empty()) {
    BATON_FAIL(kExitConfig,
               dir + " was written by another model config: " + diff + " (checkpoint vs run)",
               "fix model.* in the config (or model.init_from), or start a new run folder");
  }
}

// A full load's state: the model checked against the run's, then trainer_state.json's ranges.
TrainerState FullLoadState(const std::string& dir, VideoActionModel& model) {
  CheckSameModel(dir, model);
  const fs::path state_path = fs::path(dir) / kStateFile;
  auto st_text = ReadFile(state_path.string());
  if (!st_text.ok())
    FailAt(__FILE__, __LINE__, kExitData, st_text.status().ToString(),
           "the checkpoint is damaged or partly deleted; resume from another one (baton-train "
           "ckpt verify)");
  TrainerState state;
  try {
    state = TrainerState::FromJson(nlohmann::json::parse(st_text.value()));
  } catch (const std::exception& e) {
    BATON_FAIL(kExitData, state_path.string() + ": unreadable trainer state: " + e.what(),
               "the checkpoint is damaged; resume from another one (baton-train ckpt verify)");
  }
  CheckTrainerStateRanges(state, state_path.string());
  return state;
}

// A weights-only load's state: only the step, from the folder's name.
TrainerState WeightsOnlyState(const std::string& dir) {
  const int64_t step = CheckpointStepFromName(fs::path(dir).filename().string());
  if (step < 0) {
    BATON_FAIL(kExitConfig,
               dir + ": a weights-only resume takes step0 from a folder named checkpoint_step_<N>",
               "rename the folder or pass an explicit checkpoint_step_<N> path");
  }
  TrainerState state;
  state.step = step;
  return state;
}

void ReadWeights(CheckpointReader& reader, const std::string& dir, VideoActionModel& model,
                 LoadMode mode) {
  std::error_code ec;
  const fs::path d(dir);
  const ShapeMismatch mismatch =
      mode == LoadMode::kFull ? ShapeMismatch::kDamaged : ShapeMismatch::kConfig;
  std::map<std::string, Target> weights;
  for (auto& p : model->named_parameters()) weights[p.key()] = {p.value(), mismatch};
  if (fs::exists(d / kMasterWeightsIndexFile, ec) || fs::exists(d / kMasterWeightsFile, ec)) {
    ReadTargets(reader, dir, kMasterWeightsFile, kMasterWeightsIndexFile, weights, true);
  } else if (reader.verifying()) {  // baton's own transformer/, vouched for by the manifest
    ReadTargets(reader, dir, kWeightsFile, kWeightsIndexFile, weights, true);
  } else {  // a folder without a manifest: upstream's reader and its rules
    LoadTransformerWeights((d / "transformer").string(), model);
  }
}

// One file, or one per rank of the run that saved it: any rank count can read either, each rank
// only the moments it owns now (and every step count).
void ReadMoments(CheckpointReader& reader, const std::string& dir, AdamW& optimizer) {
  auto& opt = optimizer.state();
  std::map<std::string, Target> moments;
  std::vector<torch::Tensor> steps(opt.size());
  for (size_t i = 0; i < opt.size(); ++i) {
    auto& s = opt[i];
    if (s.owned) {
      moments["exp_avg." + s.name] = {s.exp_avg};
      moments["exp_avg_sq." + s.name] = {s.exp_avg_sq};
    }
    steps[i] = torch::zeros({1}, torch::kInt64);
    moments["step." + s.name] = {steps[i]};
  }
  ReadTargets(reader, dir, kOptimizerFile, kOptimizerIndexFile, moments, false);
  for (size_t i = 0; i < opt.size(); ++i) opt[i].step = steps[i].item<int64_t>();
}

}  // namespace

TrainerState LoadCheckpoint(const std::string& dir, VideoActionModel& model, AdamW* optimizer,
                            LoadMode mode, LoadShare share) {
  const std::optional<CheckpointManifest> manifest = VerifiedManifest(dir, mode);
  CheckpointReader reader(dir, manifest ? &*manifest : nullptr, share);
  reader.CheckSmallFiles();
  const TrainerState state =
      mode == LoadMode::kFull ? FullLoadState(dir, model) : WeightsOnlyState(dir);
  torch::NoGradGuard no_grad;
  ReadWeights(reader, dir, model, mode);
  if (mode == LoadMode::kFull && optimizer != nullptr) ReadMoments(reader, dir, *optimizer);
  reader.VerifyRest();
  return state;
}

}  // namespace baton
