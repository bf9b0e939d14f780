// The memory plan report: what `baton-train plan-memory --json` prints (one JSON object) and what
// `baton submit` reads back for its memory check (orchestrator/submit/memory_check.h) and its
// grace check (the stop save's size, grace_check.h). docs/trainer.md ("Memory plan") is its prose;
// the key names live here and nowhere else, in one table per part (memory_plan_report.cc) that
// ToJson, FromJson and operator== all walk.
//
// Unlike the event records, the report is read by the build that wrote it moments ago, so
// FromJson is strict: every key must be there with its type (an integer for a byte count, a name
// of its vocabulary for an enum); the first that is not is kInvalidArgument naming its path
// ("bytes.total: missing"). `checkpoint.rank_bytes` alone may be left out (worlds over 64 ranks;
// an empty list). Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "schema/status.h"
#include "schema/vocabularies.h"

namespace baton {

struct MemoryPlanReport {
  std::string config;  // the config file as named on the command line
  int64_t world_size = 1;
  DType dtype = DType::kFloat32;
  Device device = Device::kCpu;
  ShardMode shard = ShardMode::kNone;
  OptimMaster master = OptimMaster::kReplicated;
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::kNone;

  struct Parameters {
    int64_t total = 0, trainable = 0;
  } parameters;

  // The longest packed row (trainer/memory/memory_plan.h, PlanRow).
  struct Row {
    std::string source;  // the dataset folder, or "--frames"
    int64_t batch = 0, padded_frames = 0, tokens = 0, valid_tokens = 0, key_slots = 0;
    int64_t computed_pairs = 0, recomputed_call_pairs = 0, chunk = 0, window = 0;
  } row;

  // Bytes per rank by category, with the configured checkpointing (MemoryPlan).
  struct Bytes {
    // weights: with optim.master sharded in bf16, the bf16 compute copies and the fp32 rest;
    // master_share: then the fp32 master of the rank's share (0 otherwise).
    int64_t weights = 0, master_share = 0, gradients = 0, gradients_held = 0, optimizer = 0;
    int64_t collective_buffers = 0, autocast_copies = 0, activations = 0, heap_overhead = 0;
    int64_t runtime = 0, checkpoint_snapshot = 0, total = 0;
  } bytes;
  // CPU: the host snapshot is in the total; CUDA: it is host memory beside the device total.
  bool checkpoint_snapshot_in_total = true;

  // Live activation bytes for every checkpointing setting, and their parts (ActivationBytes).
  struct Activations {
    int64_t none = 0, blocks = 0, blocks_attention = 0;
    int64_t per_block = 0, outside_blocks = 0, inputs = 0, working = 0;
    int64_t per_block_attention = 0, attention_call = 0, working_attention = 0;
  } activations;
  double heap_factor = 1.0;

  // What one checkpoint makes the ranks write (CheckpointBytes).
  struct Checkpoint {
    int64_t bytes_total = 0, bytes_per_rank_max = 0;
    ExportDType export_dtype = ExportDType::kFp32;
    std::vector<int64_t> rank_bytes;  // per rank; empty (left out) above 64 ranks
    // The whole folder on disk: tensors, headers, step counts, indexes, manifest
    // (CheckpointDiskBytes), and how many files it holds.
    int64_t disk_bytes = 0, disk_files = 0;
  } checkpoint;

  struct Totals {
    int64_t none = 0, blocks = 0, blocks_attention = 0;
  } total_by_checkpointing;

  // The config's memory per rank (slurm.gpu_memory_gb or slurm.mem_per_task_gb); none (null)
  // when that key is 0, and then `fits` is none too.
  struct Limit {
    std::string key;
    double gb = 0;
    int64_t bytes = 0;
  };
  std::optional<Limit> limit;
  std::optional<bool> fits;

  // Keys in the order above.
  nlohmann::ordered_json ToJson() const;
  [[nodiscard]] static Result<MemoryPlanReport> FromJson(const nlohmann::json& j);
  // Field by field, through the same tables.
  bool operator==(const MemoryPlanReport& other) const;
  bool operator!=(const MemoryPlanReport& other) const { return !(*this == other); }
};

// The run config key that states a rank's memory for `device`: slurm.gpu_memory_gb for cuda,
// slurm.mem_per_task_gb for cpu.
const char* MemoryLimitKey(Device device);

}  // namespace baton
