#include "trainer/memory/checkpoint_disk_bytes.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "schema/checkpoint_manifest.h"
#include "trainer/ckpt/save_files.h"
#include "trainer/distributed/shard_plan.h"

namespace baton {

namespace {

// Sums the files of one checkpoint as the save lists them, for the manifest at the end.
class FolderTally {
 public:
  void Tensors(const std::string& rel, const std::vector<StTensorRef>& tensors,
               const std::map<std::string, std::string>& metadata = {}) {
    Result<std::string> header = SafetensorsHeader(rel, tensors, metadata);
    if (!header.ok()) {
      overflow_ = true;
      return;
    }
    int64_t n = 8 + int64_t(header->size());
    for (const StTensorRef& t : tensors) {
      int64_t e = int64_t(StDTypeSize(t.dtype));
      for (int64_t d : t.shape) overflow_ = overflow_ || __builtin_mul_overflow(e, d, &e);
      overflow_ = overflow_ || __builtin_add_overflow(n, e, &n);
    }
    Add(rel, n);
  }
  void Text(const std::string& rel, int64_t bytes) { Add(rel, bytes); }
  // The manifest, dumped as WriteManifestListed dumps it (a 16-digit hash, a 10-digit step).
  CheckpointDisk Finish(int64_t world) {
    nlohmann::ordered_json j{{"format_version", 2},
                             {"step", 1000000000},
                             {"kind", "full"},
                             {"world_size", world},
                             {"config_hash", Hash()},
                             {"finite", true},
                             {"files", nlohmann::ordered_json::array()}};
    for (const auto& [rel, bytes] : files_)
      j["files"].push_back({{"path", rel}, {"bytes", bytes}, {"xxh3", Hash()}});
    CheckpointDisk out;
    out.bytes = total_ + int64_t(j.dump(2).size()) + 1;
    out.files = int64_t(files_.size()) + 1;
    out.overflow = overflow_;
    return out;
  }

 private:
  static std::string Hash() { return std::string(16, '0'); }
  void Add(const std::string& rel, int64_t bytes) {
    files_.emplace_back(rel, bytes);
    overflow_ = overflow_ || __builtin_add_overflow(total_, bytes, &total_);
  }
  std::vector<std::pair<std::string, int64_t>> files_;
  int64_t total_ = 0;
  bool overflow_ = false;
};

std::string IndexText(const nlohmann::json& map, const nlohmann::json& metadata) {
  return nlohmann::json{{"metadata", metadata}, {"weight_map", map}}.dump(2) + "\n";
}

}  // namespace

CheckpointDisk CheckpointDiskBytes(const std::vector<PlanParameter>& params, int64_t world,
                                   StDType master, StDType exported, int64_t max_shard_bytes) {
  if (world < 1) world = 1;
  const bool multi = world > 1, write_master = master != exported;
  std::vector<int64_t> trainable;
  for (const auto& p : params) {
    if (p.trainable) trainable.push_back(p.numel);
  }
  const ShardPlan plan = MakeShardPlan(trainable, world);
  std::vector<int64_t> owner, export_bytes;
  size_t t = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    owner.push_back(params[i].trainable ? plan.owner[t++] : int64_t(i) % world);
    export_bytes.push_back(params[i].numel * int64_t(StDTypeSize(exported)));
  }
  const std::vector<ExportShard> shards = PlanExport(owner, export_bytes, world, max_shard_bytes);
  FolderTally tally;
  nlohmann::json optimizer_map = nlohmann::json::object();
  nlohmann::json master_map = nlohmann::json::object();
  for (int64_t r = 0; r < world; ++r) {
    std::vector<StTensorRef> moments, masters;
    for (size_t i = 0; i < params.size(); ++i) {
      const PlanParameter& p = params[i];
      if (owner[i] != r) continue;
      if (p.trainable) {
        moments.push_back({"exp_avg." + p.name, master, p.shape, nullptr});
        moments.push_back({"exp_avg_sq." + p.name, master, p.shape, nullptr});
        moments.push_back({"step." + p.name, StDType::kI64, {1}, nullptr});
        for (const char* k : {"exp_avg.", "exp_avg_sq.", "step."})
          optimizer_map[k + p.name] = OptimizerShardFile(r, world);
      }
      masters.push_back({p.name, master, p.shape, nullptr});
      master_map[p.name] = MasterWeightsShardFile(r, world);
    }
    tally.Tensors(multi ? OptimizerShardFile(r, world) : kOptimizerFile, moments);
    if (write_master)
      tally.Tensors(multi ? MasterWeightsShardFile(r, world) : kMasterWeightsFile, masters);
    for (const ExportShard& sh : shards) {
      if (sh.rank != r) continue;
      std::vector<StTensorRef> refs;
      for (size_t i : sh.params) refs.push_back({params[i].name, exported, params[i].shape});
      tally.Tensors("transformer/" + sh.file, refs, {{"format", "pt"}});
    }
  }
  tally.Text(kModelConfigFile, kModelConfigAllowance);
  if (shards.size() > 1) {
    nlohmann::json map = nlohmann::json::object();
    int64_t total = 0;
    for (const ExportShard& sh : shards) {
      for (size_t i : sh.params) {
        map[params[i].name] = sh.file;
        total += export_bytes[i];
      }
    }
    tally.Text(kWeightsIndexFile, int64_t(IndexText(map, {{"total_size", total}}).size()));
  }
  const nlohmann::json world_meta = {{"world_size", world}};
  if (multi && write_master)
    tally.Text(kMasterWeightsIndexFile, int64_t(IndexText(master_map, world_meta).size()));
  if (multi) tally.Text(kOptimizerIndexFile, int64_t(IndexText(optimizer_map, world_meta).size()));
  tally.Text(kStateFile, kTrainerStateAllowance);
  return tally.Finish(world);
}

}  // namespace baton
