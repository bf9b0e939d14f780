#include "orchestrator/submit/memory_check.h"

#include <cstdio>
#include <nlohmann/json.hpp>

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

}  // namespace

Result<nlohmann::json> RunMemoryPlan(const RunConfig& config, const std::string& config_path,
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
  nlohmann::json plan = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (!plan.is_object()) {
    return Status::Internal(CommandLine(argv) + " printed no plan baton can read");
  }
  return plan;
}

Status CheckMemoryPlan(const RunConfig& config, const std::string& config_path,
                       const std::string& trainer_bin, const nlohmann::json* plan_in) {
  const bool cuda = config.train.device == "cuda";
  const double limit_gb = cuda ? config.slurm.gpu_memory_gb : config.slurm.mem_per_task_gb;
  const std::string key = cuda ? "slurm.gpu_memory_gb" : "slurm.mem_per_task_gb";
  if (limit_gb <= 0) return Status::Ok();
  if (plan_in == nullptr && trainer_bin.empty()) {
    return Status::Unavailable(
        config_path + ": " + key +
        " is set, but baton-train (which computes the memory plan) was not found "
        "($BATON_TRAIN_BIN, "
        "next to baton, or the build tree's trainer/); set BATON_TRAIN_BIN, or set " +
        key + ": 0 to submit without the check");
  }
  const int64_t world = config.slurm.nodes * config.slurm.ntasks_per_node;
  nlohmann::json ran;
  if (plan_in == nullptr) {
    BATON_ASSIGN_OR_RETURN(ran, RunMemoryPlan(config, config_path, trainer_bin));
  }
  const nlohmann::json& plan = plan_in != nullptr ? *plan_in : ran;
  try {
    const auto& b = plan.at("bytes");
    const double total = b.at("total").get<double>();
    const double limit = limit_gb * double(int64_t(1) << 30);
    if (total <= limit) return Status::Ok();
    char head[160];
    std::snprintf(head, sizeof head, "%g GiB", limit_gb);
    const std::string checkpointing = plan.at("activation_checkpointing").get<std::string>();
    std::string parts = "weights " + Gib(b.at("weights").get<double>()) + ", gradients " +
                        Gib(b.at("gradients").get<double>()) + ", optimizer state " +
                        Gib(b.at("optimizer").get<double>()) + ", collective buffers " +
                        Gib(b.at("collective_buffers").get<double>());
    if (b.at("autocast_copies").get<double>() > 0) {
      parts += ", autocast bf16 weight copies " + Gib(b.at("autocast_copies").get<double>());
    }
    parts += ", activations (" + checkpointing + ") " + Gib(b.at("activations").get<double>());
    if (b.value("heap_overhead", 0.0) > 0) {
      parts += ", CPU heap overhead " + Gib(b.at("heap_overhead").get<double>());
    }
    parts += ", runtime " + Gib(b.at("runtime").get<double>());
    if (plan.value("checkpoint_snapshot_in_total", false) &&
        b.value("checkpoint_snapshot", 0.0) > 0) {
      parts += ", checkpoint snapshot " + Gib(b.at("checkpoint_snapshot").get<double>());
    }
    std::string hint;
    if (plan.at("shard").get<std::string>() == "none") hint += "optim.shard: optimizer, ";
    if (checkpointing == "none") {
      hint += "train.activation_checkpointing: blocks (or blocks+attention), ";
    } else if (checkpointing == "blocks") {
      hint += "train.activation_checkpointing: blocks+attention, ";
    }
    hint += "more ranks or a shorter longest row (data.batch_size)";
    return Status::Config(
        config_path + ": " + key + ": the run's memory plan needs " + Gib(total) +
        " per rank, more than the " + head + " this key allows (" + parts + "; " +
        std::to_string(world) + " rank(s), " + plan.at("dtype").get<std::string>() +
        ", optim.shard " + plan.at("shard").get<std::string>() + ", longest row " +
        std::to_string(plan.at("row").at("tokens").get<int64_t>()) + " tokens). Try " + hint +
        "; `baton-train plan-memory --config " + config_path + "` prints the plan");
  } catch (const nlohmann::json::exception& e) {
    return Status::Internal("baton-train plan-memory printed no plan baton can read: " +
                            std::string(e.what()));
  }
}

}  // namespace baton
