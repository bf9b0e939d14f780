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
// save_files.h; the write and the commit, save_commit.cc.
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

// A checkpoint vouches for its state: never one that would spread NaN into every resume. Every
// rank checks the moments it holds (rank 0 also the weights), and all agree before writing.
void RefuseNonFinite(const PreparedSave& p, VideoActionModel& model, const AdamW& optimizer,
                     const SaveTeam* team, const std::string& name) {
  const std::string bad = FirstNonFinite(p.leader ? &model : nullptr, optimizer);
  const bool any_bad = p.multi ? team->any_rank(!bad.empty()) : !bad.empty();
  if (any_bad) {
    BATON_FAIL(kExitDiverged,
               "refusing to write " + name + ": " +
                   (bad.empty() ? std::string("another rank's optimizer state") : "tensor " + bad) +
                   " holds NaN/Inf (training diverged)",
               "lower optim.lr or check the data (baton-train data-check); the last finite "
               "checkpoint is kept");
  }
}

// Rank 0: the .partial folder, once the run folder is there, the cut-short saves are gone and
// the whole checkpoint has room. Returns the agreement's payload ("").
std::string MakeSaveFolder(const PreparedSave& p, VideoActionModel& model, const AdamW& optimizer,
                           const TrainerState& state, const RunConfig& config) {
  if (!p.leader) return "";
  const std::string& checkpoints_dir = p.checkpoints_dir;
  std::error_code ec;
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
  const CheckpointDisk disk = PlannedDisk(model, optimizer, config.checkpoint, p.world);
  const SaveSpace space =
      EnsureSaveSpace(checkpoints_dir, state.step, disk.bytes, disk.files, config);
  for (const std::string& gone : space.pruned) {
    std::printf(
        "checkpoint space: deleted %s now (retention drops it after this save) to fit "
        "%lld bytes\n",
        fs::path(gone).filename().c_str(), (long long)space.needed);
  }
  if (!space.pruned.empty()) std::fflush(stdout);
  fs::create_directories(p.partial / "transformer", ec);
  if (ec)
    BATON_FAIL(kExitIo, p.partial.string() + ": cannot create: " + ec.message(),
               "check disk space and permissions");
  return "";
}

// Who writes what: a parameter's weights go with its moments; one without moments (frozen) by
// turn. What a checkpoint holds of each parameter is its master: a split parameter's
// (optim.master sharded) lives on its owner, the one rank that writes it.
struct SavePlan {
  std::map<std::string, int64_t> owner_of;  // trained parameter -> the rank owning its moments
  std::vector<std::pair<std::string, torch::Tensor>> params;  // this rank's masters where it owns
  std::vector<int64_t> weight_owner, export_bytes;            // per parameter
  std::vector<ExportShard> shards;
  torch::Dtype export_dtype = torch::kFloat32;
  bool write_master = false;  // the exact weights beside a transformer/ in another dtype
};

SavePlan PlanSave(const PreparedSave& p, VideoActionModel& model, const AdamW& optimizer,
                  const SaveTeam* team) {
  SavePlan plan;
  const auto& opt_state = optimizer.state();
  for (size_t i = 0; i < opt_state.size(); ++i) {
    plan.owner_of[opt_state[i].name] = p.multi ? team->owner.at(i) : 0;
  }
  std::map<std::string, size_t> state_of;
  for (size_t i = 0; i < opt_state.size(); ++i) state_of[opt_state[i].name] = i;
  auto& params = plan.params;
  for (const auto& np : model->named_parameters()) params.push_back({np.key(), np.value()});
  auto split_state = [&](size_t i) -> const AdamW::ParamState* {
    auto it = state_of.find(params[i].first);
    return it != state_of.end() && opt_state[it->second].split ? &opt_state[it->second] : nullptr;
  };
  const auto master_dtype =
      optimizer.any_split() ? torch::kFloat32 : params.front().second.scalar_type();
  plan.export_dtype = ExportDtype(p.config.checkpoint.export_dtype);
  plan.write_master = plan.export_dtype != master_dtype;
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = plan.owner_of.find(params[i].first);
    plan.weight_owner.push_back(it != plan.owner_of.end() ? it->second : int64_t(i) % p.world);
    plan.export_bytes.push_back(params[i].second.numel() *
                                int64_t(c10::elementSize(plan.export_dtype)));
    if (plan.weight_owner.back() != p.rank) continue;
    if (const AdamW::ParamState* s = split_state(i)) {
      if (!s->master.defined()) {
        BATON_FAIL(kExitInternal,
                   "rank " + std::to_string(p.rank) + " writes " + s->name +
                       " but holds no float32 master for it",
                   "the save's ownership must be optim.shard's");
      }
      params[i].second = s->master;
    }
  }
  plan.shards = PlanExport(plan.weight_owner, plan.export_bytes, p.world,
                           p.config.checkpoint.max_shard_bytes);
  return plan;
}

// This rank's tensor files: the moments and step counts of the parameters it owns, their exact
// weights (write_master) and its transformer/ export shards.
void AddTensorFiles(PreparedSave& p, const SavePlan& plan, const AdamW& optimizer) {
  const auto& params = plan.params;
  {
    SaveFile o = NamedFile(p.multi ? OptimizerShardFile(p.rank, p.world) : kOptimizerFile);
    for (const auto& s : optimizer.state()) {
      if (plan.owner_of.at(s.name) != p.rank) continue;
      if (!s.owned) {
        BATON_FAIL(kExitInternal,
                   "rank " + std::to_string(p.rank) + " owns " + s.name +
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
  if (plan.write_master) {
    SaveFile w = NamedFile(p.multi ? MasterWeightsShardFile(p.rank, p.world) : kMasterWeightsFile);
    for (size_t i = 0; i < params.size(); ++i) {
      if (plan.weight_owner[i] == p.rank)
        w.tensors.push_back({params[i].first, params[i].second.detach(), std::nullopt});
    }
    p.files.push_back(std::move(w));
  }
  for (const auto& sh : plan.shards) {
    if (sh.rank != p.rank) continue;
    SaveFile e = NamedFile("transformer/" + sh.file);
    e.metadata = {{"format", "pt"}};
    for (size_t i : sh.params)
      e.tensors.push_back({params[i].first, params[i].second.detach(), plan.export_dtype});
    p.files.push_back(std::move(e));
  }
}

// Rank 0's small files: config.json, the three indexes (each only where there are several
// files), trainer_state.json.
void AddSmallFiles(PreparedSave& p, const SavePlan& plan, VideoActionModel& model,
                   const AdamW& optimizer, const TrainerState& state) {
  const auto& params = plan.params;
  auto small = [&](const std::string& rel, std::string text) {
    SaveFile f = NamedFile(rel);
    f.small = true;
    f.text = std::move(text);
    p.files.push_back(std::move(f));
  };
  small(kModelConfigFile, UpstreamConfigJson(model->dims()).dump(2) + "\n");
  if (plan.shards.size() > 1) {
    nlohmann::json map = nlohmann::json::object();
    int64_t total = 0;
    for (const auto& sh : plan.shards) {
      for (size_t i : sh.params) {
        map[params[i].first] = sh.file;
        total += plan.export_bytes[i];
      }
    }
    nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
    small(kWeightsIndexFile, index.dump(2) + "\n");
  }
  if (p.multi && plan.write_master) {
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (size_t i = 0; i < params.size(); ++i) {
      map[params[i].first] = MasterWeightsShardFile(plan.weight_owner[i], p.world);
    }
    nlohmann::ordered_json index{{"metadata", {{"world_size", p.world}}}, {"weight_map", map}};
    small(kMasterWeightsIndexFile, index.dump(2) + "\n");
  }
  if (p.multi) {
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (const auto& s : optimizer.state()) {
      const std::string file = OptimizerShardFile(plan.owner_of.at(s.name), p.world);
      for (const char* k : {"exp_avg.", "exp_avg_sq.", "step."}) map[k + s.name] = file;
    }
    nlohmann::ordered_json index{{"metadata", {{"world_size", p.world}}}, {"weight_map", map}};
    small(kOptimizerIndexFile, index.dump(2) + "\n");
  }
  small(kStateFile, state.ToJson().dump(2) + "\n");
}

int64_t FileBytes(const std::vector<SaveFile>& files) {
  int64_t bytes = 0;
  for (const auto& f : files) {
    bytes += f.small ? int64_t(f.text.size()) : 0;
    for (const auto& t : f.tensors) {
      bytes +=
          t.tensor.numel() * int64_t(c10::elementSize(t.dtype ? *t.dtype : t.tensor.scalar_type()));
    }
  }
  return bytes;
}

}  // namespace

PreparedSave PrepareSave(const std::string& checkpoints_dir, VideoActionModel& model,
                         const AdamW& optimizer, const TrainerState& state, const RunConfig& config,
                         const SaveHooks& hooks, const SaveTeam* team) {
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
  const std::string name = kCheckpointPrefix + std::to_string(state.step);
  RefuseNonFinite(p, model, optimizer, team, name);
  p.final_dir = fs::path(checkpoints_dir) / name;
  p.partial = p.final_dir.string() + kPartialSuffix;
  // A rank that fails in its part (a write refused) makes every rank fail alike, before anything
  // is vouched for, instead of leaving the others waiting for it.
  auto make_folder = [&] { return MakeSaveFolder(p, model, optimizer, state, config); };
  if (p.multi) {
    team->agreed("while creating the checkpoint folder", make_folder);
  } else {
    make_folder();
  }
  const SavePlan plan = PlanSave(p, model, optimizer, team);
  AddTensorFiles(p, plan, optimizer);
  if (p.leader) AddSmallFiles(p, plan, model, optimizer, state);
  p.bytes = FileBytes(p.files);
  p.manifest.step = state.step;
  p.manifest.kind = "full";
  p.manifest.world_size = state.world_size;
  p.manifest.config_hash = state.config_hash;
  p.manifest.finite = true;  // checked above
  return p;
}

SaveResult SaveCheckpoint(const std::string& checkpoints_dir, VideoActionModel& model,
                          const AdamW& optimizer, const TrainerState& state,
                          const RunConfig& config, const SaveHooks& hooks, const SaveTeam* team) {
  const PreparedSave p = PrepareSave(checkpoints_dir, model, optimizer, state, config, hooks, team);
  return CommitSave(p, [&] { return WriteSaveFiles(p); });
}

}  // namespace baton
