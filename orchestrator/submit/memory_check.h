// CheckMemoryPlan: `baton submit`'s refusal of a run whose memory plan exceeds the memory per rank
// the config states (slurm.gpu_memory_gb for a cuda run, slurm.mem_per_task_gb for a cpu run).
// A cuda run's slurm.mem_per_task_gb is held to the plan's host memory as well (the checkpoint
// snapshot, which lies beside the device total): SLURM would grant only that much.
//
// The plan is the trainer's own (`baton-train plan-memory --config CFG --world-size W --json`,
// W = nodes x ntasks_per_node), so the orchestrator never restates the model's arithmetic. With
// the key at 0 nothing runs. With the key set and no trainer to ask, the check does not pass
// silently: kUnavailable naming where the trainer was looked for and how to skip the check.
// Stateless; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "schema/memory_plan_report.h"
#include "schema/run_config.h"
#include "schema/status.h"

namespace baton {

// `config_path` is the file as the user named it; `trainer_bin` the trainer (FindTrainerBinary(),
// "" when none). kConfig naming the key, the limit, the planned total and its categories when the
// plan does not fit; the trainer's own error (its exit code mapped back) when it cannot plan.
// `plan`: the report RunMemoryPlan already made for this config, or null to run the trainer here
// (only when the key is set).
[[nodiscard]] Status CheckMemoryPlan(const RunConfig& config, const std::string& config_path,
                                     const std::string& trainer_bin,
                                     const MemoryPlanReport* plan = nullptr);

// `baton-train plan-memory --config CONFIG_PATH --world-size W --json`, read: the report both
// the memory check and the grace check read (grace_check.h); kInternal naming the first key that
// is missing or mistyped when the trainer printed no report this build can read. `trainer_bin`
// must not be "".
[[nodiscard]] Result<MemoryPlanReport> RunMemoryPlan(const RunConfig& config,
                                                     const std::string& config_path,
                                                     const std::string& trainer_bin);

// The plan both checks of a submit or a resume read: RunMemoryPlan when there is a trainer, else
// none, with `no_plan` saying why (the trainer's error, or that none was found).
std::optional<MemoryPlanReport> PlanIfPossible(const RunConfig& config,
                                               const std::string& config_path,
                                               const std::string& trainer_bin,
                                               std::string* no_plan);

}  // namespace baton
