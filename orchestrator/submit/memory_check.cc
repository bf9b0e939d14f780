#include "orchestrator/submit/memory_check.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "orchestrator/slurm/process_runner.h"
#include "schema/exit_codes.h"

namespace baton {

namespace {

// Long enough for a dataset index of millions of episodes and the CPU baseline step.
constexpr double kPlanTimeoutS = 600;

// GiB from 1 GiB up, else MiB, so a small category does not read as 0.00 GiB.
std::string Gib(double bytes) {
  char buf[32];
  const double gib = double(int64_t(1) << 30);
  if (bytes >= gib) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / gib);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1 << 20));
  }
  return buf;
}

// The trainer's exit code as a Status code: its config and data errors stay what they are.
Status FromTrainerExit(int code, const std::string& message) {
  switch (code) {
    case kExitConfig:
      return Status::Config(message);
    case kExitData:
      return Status::Data(message);
    case kExitNotFound:
      return Status::NotFound(message);
    case kExitIo:
      return Status::Io(message);
    default:
      return Status::Internal(message);
  }
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A cuda run's host memory in the plan (checkpoint.async's host snapshot, beside the device
// total) against slurm.mem_per_task_gb; nothing to check when either is 0.
Status CheckHostMemory(const MemoryPlanReport& plan, double host_gb,
                       const std::string& config_path) {
  const double host =
      plan.checkpoint_snapshot_in_total ? 0 : double(plan.bytes.checkpoint_snapshot);
  const double limit = host_gb * double(int64_t(1) << 30);
  if (host_gb <= 0 || host <= limit) return Status::Ok();
  char head[64];
  std::snprintf(head, sizeof head, "%g GiB", host_gb);
  return Status::Config(
      config_path + ": slurm.mem_per_task_gb: the run's memory plan needs " + Gib(host) +
      " of host memory per rank (checkpoint snapshot: checkpoint.async's host copy of the rank's "
      "share of the state), more than the " +
      head +
      " this key allows. Raise slurm.mem_per_task_gb (it is also SLURM's --mem-per-cpu), or "
      "set checkpoint.async: false; `baton-train plan-memory --config " +
      config_path + "` prints the plan");
}

}  // namespace

Result<MemoryPlanReport> RunMemoryPlan(const RunConfig& config, const std::string& config_path,
                                       const std::string& trainer_bin) {
  const int64_t world = config.slurm.nodes * config.slurm.ntasks_per_node;
  const std::vector<std::string> argv = {trainer_bin, "plan-memory",  "--config",
                                         config_path, "--world-size", std::to_string(world),
                                         "--json"};
  BATON_ASSIGN_OR_RETURN(ProcessResult r, RunProcess(argv, kPlanTimeoutS));
  if (r.timed_out) {
    return Status::Unavailable(CommandLine(argv) + " did not finish in " +
                               std::to_string(int(kPlanTimeoutS)) + " s");
  }
  if (r.exit_code != 0) {
    return FromTrainerExit(r.exit_code, config_path + ": the memory plan (" + CommandLine(argv) +
                                            ") failed with exit " + std::to_string(r.exit_code) +
                                            ": " + Trim(r.err));
  }
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  Result<MemoryPlanReport> plan = MemoryPlanReport::FromJson(j);
  if (!plan.ok()) {
    return Status::Internal(CommandLine(argv) +
                            " printed no plan baton can read: " + plan.status().message());
  }
  return plan;
}

std::optional<MemoryPlanReport> PlanIfPossible(const RunConfig& config,
                                               const std::string& config_path,
                                               const std::string& trainer_bin,
                                               std::string* no_plan) {
  *no_plan = "baton-train (which plans the checkpoint's size) was not found";
  if (trainer_bin.empty()) return std::nullopt;
  Result<MemoryPlanReport> p = RunMemoryPlan(config, config_path, trainer_bin);
  if (p.ok()) return std::move(p).value();
  *no_plan = p.status().message();
  return std::nullopt;
}

Status CheckMemoryPlan(const RunConfig& config, const std::string& config_path,
                       const std::string& trainer_bin, const MemoryPlanReport* plan_in) {
  const bool cuda = config.train.device == Device::kCuda;
  const double limit_gb = cuda ? config.slurm.gpu_memory_gb : config.slurm.mem_per_task_gb;
  const std::string key = MemoryLimitKey(config.train.device);
  // A cuda run's host memory is held to slurm.mem_per_task_gb too (a cpu run's is its total).
  const double host_gb = cuda ? config.slurm.mem_per_task_gb : 0;
  if (limit_gb <= 0 && host_gb <= 0) return Status::Ok();
  if (plan_in == nullptr && trainer_bin.empty()) {
    const std::string set = limit_gb > 0 ? key : "slurm.mem_per_task_gb";
    return Status::Unavailable(
        config_path + ": " + set +
        " is set, but baton-train (which computes the memory plan) was not found "
        "($BATON_TRAIN_BIN, "
        "next to baton, or the build tree's trainer/); set BATON_TRAIN_BIN, or set " +
        set + ": 0 to submit without the check");
  }
  const int64_t world = config.slurm.nodes * config.slurm.ntasks_per_node;
  MemoryPlanReport ran;
  if (plan_in == nullptr) {
    BATON_ASSIGN_OR_RETURN(ran, RunMemoryPlan(config, config_path, trainer_bin));
  }
  const MemoryPlanReport& plan = plan_in != nullptr ? *plan_in : ran;
  BATON_RETURN_IF_ERROR(CheckHostMemory(plan, host_gb, config_path));
  if (limit_gb <= 0) return Status::Ok();
  const MemoryPlanReport::Bytes& b = plan.bytes;
  const double total = double(b.total);
  const double limit = limit_gb * double(int64_t(1) << 30);
  if (total <= limit) return Status::Ok();
  char head[160];
  std::snprintf(head, sizeof head, "%g GiB", limit_gb);
  const ActivationCheckpointing checkpointing = plan.activation_checkpointing;
  std::string parts = "weights " + Gib(b.weights) +
                      (b.master_share > 0 ? ", master weights (owned share) " + Gib(b.master_share)
                                          : std::string()) +
                      ", gradients " + Gib(b.gradients) + ", optimizer state " + Gib(b.optimizer) +
                      ", collective buffers " + Gib(b.collective_buffers);
  if (b.autocast_copies > 0) parts += ", autocast bf16 weight copies " + Gib(b.autocast_copies);
  parts += std::string(", activations (") + Name(checkpointing) + ") " + Gib(b.activations);
  if (b.heap_overhead > 0) parts += ", CPU heap overhead " + Gib(b.heap_overhead);
  parts += ", runtime " + Gib(b.runtime);
  if (plan.checkpoint_snapshot_in_total && b.checkpoint_snapshot > 0) {
    parts += ", checkpoint snapshot " + Gib(b.checkpoint_snapshot);
  }
  // The levers, cheapest first: shard the optimizer, recompute more, then more ranks.
  std::string hint;
  if (plan.shard == ShardMode::kNone) {
    hint += std::string("optim.shard: ") + Name(ShardMode::kOptimizer) + ", ";
  }
  if (checkpointing == ActivationCheckpointing::kNone) {
    hint += "train.activation_checkpointing: blocks (or blocks+attention), ";
  } else if (checkpointing == ActivationCheckpointing::kBlocks) {
    hint += "train.activation_checkpointing: blocks+attention, ";
  }
  hint += "more ranks or a shorter longest row (data.batch_size)";
  return Status::Config(config_path + ": " + key + ": the run's memory plan needs " + Gib(total) +
                        " per rank, more than the " + head + " this key allows (" + parts + "; " +
                        std::to_string(world) + " rank(s), " + Name(plan.dtype) + ", optim.shard " +
                        Name(plan.shard) + ", longest row " + std::to_string(plan.row.tokens) +
                        " tokens). Try " + hint + "; `baton-train plan-memory --config " +
                        config_path + "` prints the plan");
}

}  // namespace baton
