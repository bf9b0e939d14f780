// SaveCheckpoint: every rank writes about 1/W of the bytes, each file hashed while it is written.
//
// Who writes what (docs/checkpoint_format.md): each parameter has an owning rank, the one that
// owns its AdamW moments (optim.shard's plan, or the same element-balanced plan in a replicated
// run, where every rank holds every moment but writes only its own). A rank writes, for the
// parameters it owns, the moments and step counts (optimizer-0000r-of-0000W), the exact master
// weights when the export dtype is not theirs (master_weights-0000r-of-0000W) and the
// transformer/ export shards (diffusion_pytorch_model-0000i-of-0000n, diffusers' names, split
// further above checkpoint.max_shard_bytes). Rank 0 also writes the small files: config.json,
// the three indexes, trainer_state.json, and last, after every rank's files are durable, the
// manifest from the sizes and hashes each rank computed while writing. One rank keeps the
// single-file names of earlier versions. The export's file plan and the small files' writing are
// save_files.h.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "schema/atomic_file.h"
#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/ckpt/save_files.h"
#include "trainer/ckpt/save_phases.h"
#include "trainer/ckpt/save_space.h"
#include "trainer/ckpt/tensor_file_io.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/distributed/shard_plan.h"
#include "trainer/fail.h"
#include "trainer/memory/checkpoint_disk_bytes.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

// Tensors held on the CPU and contiguous for the life of a write: a CPU master tensor is used
// as it is (no copy); a device tensor or another dtype gets the one copy the format needs.
struct HeldTensors {
  std::vector<torch::Tensor> keep;
  std::vector<StTensorRef> refs;
  void Add(const std::string& name, const torch::Tensor& t,
           std::optional<torch::Dtype> dtype = std::nullopt) {
    torch::Tensor held = t.detach();
    if (held.device().type() != torch::kCPU) held = held.to(torch::kCPU);
    if (dtype && held.scalar_type() != *dtype) held = held.to(*dtype);
    keep.push_back(held.contiguous());
    refs.push_back({name, ToStDType(keep.back().scalar_type()), keep.back().sizes().vec(),
                    keep.back().data_ptr()});
  }
};

// One checkpoint folder's bytes as the save below will write it (CheckpointDiskBytes), from the
// model's parameters and which of them the optimizer trains.
CheckpointDisk PlannedDisk(VideoActionModel& model, const AdamW& optimizer,
                           const CheckpointSection& retention, int64_t world) {
  std::set<std::string> trained;
  for (const auto& s : optimizer.state()) trained.insert(s.name);
  std::vector<PlanParameter> params;
  for (const auto& np : model->named_parameters()) {
    params.push_back(
        {np.key(), np.value().numel(), trained.count(np.key()) > 0, np.value().sizes().vec()});
  }
  const torch::Dtype master = optimizer.any_split() || params.empty()
                                  ? torch::kFloat32
                                  : model->parameters().front().scalar_type();
  return CheckpointDiskBytes(params, world, ToStDType(master),
                             ToStDType(ExportDtype(retention.export_dtype)),
                             retention.max_shard_bytes);
}

SaveFile NamedFile(const std::string& rel) {
  SaveFile f;
  f.rel = rel;
  return f;
}

}  // namespace

PreparedSave PrepareSave(const std::string& checkpoints_dir, VideoActionModel& model,
                         const AdamW& optimizer, const TrainerState& state, const RunConfig& config,
                         const SaveHooks& hooks, const SaveTeam* team) {
  const CheckpointSection& retention = config.checkpoint;
  PreparedSave p;
  p.t0 = std::chrono::steady_clock::now();
  p.checkpoints_dir = checkpoints_dir;
  p.step = state.step;
  p.multi = team != nullptr && team->world > 1;
  if (p.multi) p.team = *team;
  p.rank = p.multi ? team->rank : 0;
  p.world = p.multi ? team->world : 1;
  p.leader = p.rank == 0;
  p.hooks = hooks;
  p.config = config;
  const bool multi = p.multi, leader = p.leader;
  const int64_t rank = p.rank, world = p.world;
  const std::string name = kCheckpointPrefix + std::to_string(state.step);
  // A checkpoint vouches for its state: never one that would spread NaN into every resume. Every
  // rank checks the moments it holds (rank 0 also the weights), and all agree before writing.
  const std::string bad = FirstNonFinite(leader ? &model : nullptr, optimizer);
  const bool any_bad = multi ? team->any_rank(!bad.empty()) : !bad.empty();
  if (any_bad) {
    BATON_FAIL(kExitDiverged,
               "refusing to write " + name + ": " +
                   (bad.empty() ? std::string("another rank's optimizer state") : "tensor " + bad) +
                   " holds NaN/Inf (training diverged)",
               "lower optim.lr or check the data (baton-train data-check); the last finite "
               "checkpoint is kept");
  }
  p.final_dir = fs::path(checkpoints_dir) / name;
  p.partial = p.final_dir.string() + kPartialSuffix;
  const fs::path partial = p.partial;
  std::error_code ec;
  auto make_folder = [&]() -> std::string {
    if (!leader) return "";
    // checkpoints/ inside the run folder, never the run folder itself: one deleted under the
    // live run (since the step boundary's check) is an error, not a new folder of that name.
    const fs::path run_folder = fs::path(checkpoints_dir).parent_path();
    if (!fs::is_directory(run_folder, ec))
      BATON_FAIL(kExitData, run_folder.string() + ": the run folder is gone",
                 "it was deleted or moved while the run trained; restore it and resume");
    fs::create_directory(checkpoints_dir, ec);
    // Only this save writes here (a background save is committed or abandoned before another
    // save starts), so any .partial is a save that was cut short.
    for (const auto& e : fs::directory_iterator(checkpoints_dir, ec)) {
      const std::string n = e.path().filename().string();
      if (n.size() > 8 && n.compare(n.size() - 8, 8, kPartialSuffix) == 0)
        fs::remove_all(e.path(), ec);
    }
    // Room for the whole folder before any of it is written: a save that cannot fit is not
    // started, so a full disk never leaves a half-written checkpoint.
    const CheckpointDisk disk = PlannedDisk(model, optimizer, retention, world);
    const SaveSpace space =
        EnsureSaveSpace(checkpoints_dir, state.step, disk.bytes, disk.files, config);
    for (const std::string& gone : space.pruned) {
      std::printf(
          "checkpoint space: deleted %s now (retention drops it after this save) to fit "
          "%lld bytes\n",
          fs::path(gone).filename().c_str(), (long long)space.needed);
    }
    if (!space.pruned.empty()) std::fflush(stdout);
    fs::create_directories(partial / "transformer", ec);
    if (ec)
      BATON_FAIL(kExitIo, partial.string() + ": cannot create: " + ec.message(),
                 "check disk space and permissions");
    return "";
  };
  // A rank that fails in its part (a write refused) makes every rank fail alike, before anything
  // is vouched for, instead of leaving the others waiting for it.
  if (multi) {
    team->agreed("while creating the checkpoint folder", make_folder);
  } else {
    make_folder();
  }

  // Ownership: a parameter's weights go with its moments; one without moments (frozen) by turn.
  const auto& opt_state = optimizer.state();
  std::map<std::string, int64_t> owner_of;
  for (size_t i = 0; i < opt_state.size(); ++i) {
    owner_of[opt_state[i].name] = multi ? team->owner.at(i) : 0;
  }
  // What a checkpoint holds of each parameter is its master: a split parameter's (optim.master
  // sharded) lives on its owner, the one rank that writes it.
  std::map<std::string, size_t> state_of;
  for (size_t i = 0; i < opt_state.size(); ++i) state_of[opt_state[i].name] = i;
  std::vector<std::pair<std::string, torch::Tensor>> params;
  for (const auto& np : model->named_parameters()) params.push_back({np.key(), np.value()});
  auto split_state = [&](size_t i) -> const AdamW::ParamState* {
    auto it = state_of.find(params[i].first);
    return it != state_of.end() && opt_state[it->second].split ? &opt_state[it->second] : nullptr;
  };
  const auto master_dtype =
      optimizer.any_split() ? torch::kFloat32 : params.front().second.scalar_type();
  const torch::Dtype export_dtype = ExportDtype(retention.export_dtype);
  const bool write_master = export_dtype != master_dtype;
  std::vector<int64_t> weight_owner, export_bytes;
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = owner_of.find(params[i].first);
    weight_owner.push_back(it != owner_of.end() ? it->second : int64_t(i) % world);
    export_bytes.push_back(params[i].second.numel() * int64_t(c10::elementSize(export_dtype)));
    if (weight_owner.back() != rank) continue;
    if (const AdamW::ParamState* s = split_state(i)) {
      if (!s->master.defined()) {
        BATON_FAIL(kExitInternal,
                   "rank " + std::to_string(rank) + " writes " + s->name +
                       " but holds no float32 master for it",
                   "the save's ownership must be optim.shard's");
      }
      params[i].second = s->master;
    }
  }
  const std::vector<ExportShard> shards =
      PlanExport(weight_owner, export_bytes, world, retention.max_shard_bytes);
  const std::string optimizer_file = multi ? OptimizerShardFile(rank, world) : kOptimizerFile;
  const std::string master_file = multi ? MasterWeightsShardFile(rank, world) : kMasterWeightsFile;

  {
    SaveFile o =
        NamedFile(optimizer_file);  // the moments and step counts of the parameters this rank owns
    for (size_t i = 0; i < opt_state.size(); ++i) {
      const auto& s = opt_state[i];
      if (owner_of[s.name] != rank) continue;
      if (!s.owned) {
        BATON_FAIL(kExitInternal,
                   "rank " + std::to_string(rank) + " owns " + s.name +
                       " in the save plan but holds no moments for it",
                   "the save's ownership must be optim.shard's");
      }
      o.tensors.push_back({"exp_avg." + s.name, s.exp_avg.detach(), std::nullopt});
      o.tensors.push_back({"exp_avg_sq." + s.name, s.exp_avg_sq.detach(), std::nullopt});
      o.tensors.push_back(
          {"step." + s.name, torch::full({1}, s.step, torch::kInt64), std::nullopt});
    }
    p.files.push_back(std::move(o));
  }
  if (write_master) {  // the exact weights beside a transformer/ in another dtype
    SaveFile w = NamedFile(master_file);
    for (size_t i = 0; i < params.size(); ++i) {
      if (weight_owner[i] == rank)
        w.tensors.push_back({params[i].first, params[i].second.detach(), std::nullopt});
    }
    p.files.push_back(std::move(w));
  }
  for (const auto& sh : shards) {
    if (sh.rank != rank) continue;
    SaveFile e = NamedFile("transformer/" + sh.file);
    e.metadata = {{"format", "pt"}};
    for (size_t i : sh.params)
      e.tensors.push_back({params[i].first, params[i].second.detach(), export_dtype});
    p.files.push_back(std::move(e));
  }
  auto small = [&](const std::string& rel, std::string text) {
    SaveFile f = NamedFile(rel);
    f.small = true;
    f.text = std::move(text);
    p.files.push_back(std::move(f));
  };
  if (leader) {
    small(kModelConfigFile, UpstreamConfigJson(model->dims()).dump(2) + "\n");
    if (shards.size() > 1) {
      nlohmann::json map = nlohmann::json::object();
      int64_t total = 0;
      for (const auto& sh : shards) {
        for (size_t i : sh.params) {
          map[params[i].first] = sh.file;
          total += export_bytes[i];
        }
      }
      nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
      small(kWeightsIndexFile, index.dump(2) + "\n");
    }
    if (multi && write_master) {
      nlohmann::ordered_json map = nlohmann::ordered_json::object();
      for (size_t i = 0; i < params.size(); ++i) {
        map[params[i].first] = MasterWeightsShardFile(weight_owner[i], world);
      }
      nlohmann::ordered_json index{{"metadata", {{"world_size", world}}}, {"weight_map", map}};
      small(kMasterWeightsIndexFile, index.dump(2) + "\n");
    }
    if (multi) {
      nlohmann::ordered_json map = nlohmann::ordered_json::object();
      for (const auto& s : opt_state) {
        const std::string file = OptimizerShardFile(owner_of[s.name], world);
        for (const char* k : {"exp_avg.", "exp_avg_sq.", "step."}) map[k + s.name] = file;
      }
      nlohmann::ordered_json index{{"metadata", {{"world_size", world}}}, {"weight_map", map}};
      small(kOptimizerIndexFile, index.dump(2) + "\n");
    }
    small(kStateFile, state.ToJson().dump(2) + "\n");
  }
  p.bytes = 0;
  for (const auto& f : p.files) {
    p.bytes += f.small ? int64_t(f.text.size()) : 0;
    for (const auto& t : f.tensors) {
      p.bytes +=
          t.tensor.numel() * int64_t(c10::elementSize(t.dtype ? *t.dtype : t.tensor.scalar_type()));
    }
  }
  p.manifest.step = state.step;
  p.manifest.kind = "full";
  p.manifest.world_size = state.world_size;
  p.manifest.config_hash = state.config_hash;
  p.manifest.finite = true;  // checked above
  return p;
}

std::string WriteSaveFiles(const PreparedSave& p, const AfterChunk& after_chunk) {
  nlohmann::json written = nlohmann::json::array();
  bool first = true;  // the optimizer file: a test's mid_file fault comes after it
  for (const auto& f : p.files) {
    if (f.small) {
      written.push_back(WriteSmall(p.partial, f.rel, f.text));
      if (after_chunk && !after_chunk(f.text.size()))
        BATON_FAIL(kExitIo, (p.partial / f.rel).string() + ": cancelled",
                   "the save was cancelled while writing (a stop or a failed peer); the last "
                   "committed checkpoint stands");
      continue;
    }
    HeldTensors held;  // converted one file at a time: one file's copy in memory at most
    for (const auto& t : f.tensors) held.Add(t.name, t.tensor, t.dtype);
    auto d =
        WriteHashedSafetensors((p.partial / f.rel).string(), held.refs, f.metadata, after_chunk);
    if (!d.ok()) {
      FailAt(__FILE__, __LINE__, d.status(),
             "check disk space and that " + p.checkpoints_dir + " is writable");
    }
    written.push_back(ManifestEntry(f.rel, d.value()));
    if (first && p.hooks.mid_file) p.hooks.mid_file();
    first = false;
  }
  return written.dump();
}

namespace {

SaveResult CommitOrThrow(const PreparedSave& p, const std::function<std::string()>& part) {
  // Every rank's files are durable (each was fsync'd) before the manifest vouches for them.
  const std::vector<std::string> parts =
      p.multi ? p.team.agreed("while writing its part of the checkpoint", part)
              : std::vector<std::string>{part()};
  SaveResult r;
  r.rank_bytes.assign(size_t(p.world), 0);
  CheckpointManifest m = p.manifest;
  for (size_t k = 0; k < parts.size(); ++k) {
    for (const auto& e : nlohmann::json::parse(parts[k])) {
      m.files.push_back({e.at("path").get<std::string>(), e.at("bytes").get<uint64_t>(),
                         e.at("xxh3").get<std::string>()});
      r.rank_bytes[k] += int64_t(m.files.back().bytes);
      r.bytes += int64_t(m.files.back().bytes);
    }
  }
  if (!p.leader) return r;
  if (p.hooks.before_manifest) p.hooks.before_manifest();
  const fs::path& partial = p.partial;
  const fs::path& final_dir = p.final_dir;
  std::error_code ec;
  BATON_CHECK_OK(WriteManifestListed(partial.string(), m), "check disk space");
  BATON_CHECK_OK(FsyncDir((partial / "transformer").string()),
                 "check that " + p.checkpoints_dir + " is on a filesystem that supports fsync");
  BATON_CHECK_OK(FsyncDir(partial.string()),
                 "check that " + p.checkpoints_dir + " is on a filesystem that supports fsync");
  if (p.hooks.before_rename) p.hooks.before_rename();
  if (fs::exists(final_dir, ec)) {  // re-saving a step (a resume redid it): replace whole
    const fs::path old = final_dir.string() + ".old." + std::to_string(::getpid());
    fs::rename(final_dir, old, ec);
    fs::rename(partial, final_dir, ec);
    fs::remove_all(old);
  } else {
    fs::rename(partial, final_dir, ec);
  }
  if (ec)
    BATON_FAIL(kExitIo, final_dir.string() + ": rename failed: " + ec.message(),
               "check permissions and disk space in " + p.checkpoints_dir);
  BATON_CHECK_OK(FsyncDir(p.checkpoints_dir),
                 "check that " + p.checkpoints_dir + " is on a filesystem that supports fsync");

  r.path = final_dir.string();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - p.t0).count();
  ApplyRetention(p.checkpoints_dir, p.config);
  return r;
}

}  // namespace

SaveResult CommitSave(const PreparedSave& p, const std::function<std::string()>& part) {
  try {
    return CommitOrThrow(p, part);
  } catch (const FatalError& e) {
    // A write the filesystem refused (full, read-only) leaves no half-written folder: every
    // rank's part has ended by now (the agreement above), so rank 0 removes it.
    if (p.leader && e.exit_code() == kExitIo) {
      std::error_code ec;
      fs::remove_all(p.partial, ec);
    }
    throw;
  }
}

SaveResult SaveCheckpoint(const std::string& checkpoints_dir, VideoActionModel& model,
                          const AdamW& optimizer, const TrainerState& state,
                          const RunConfig& config, const SaveHooks& hooks, const SaveTeam* team) {
  const PreparedSave p = PrepareSave(checkpoints_dir, model, optimizer, state, config, hooks, team);
  return CommitSave(p, [&] { return WriteSaveFiles(p); });
}

}  // namespace baton
