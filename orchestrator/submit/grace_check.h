// PlanStopSave: `baton submit`'s weighing of the stop save against the grace a preemption gives,
// before the run enters the queue (docs/orchestrator.md, "Grace budget").
//
// The grace is slurm.preempt_grace_s when set, else the partition's GraceTime plus the cluster's
// KillWait (SLURM signals a preempted job, ends it GraceTime later with SIGTERM, and sends
// SIGKILL KillWait after that). The stop save is the largest rank's checkpoint bytes (the
// trainer's plan, MemoryPlanReport::checkpoint.bytes_per_rank_max) over the folder's write
// rate: checkpoint.write_gbps when set, else a probe of the folder that will hold the run
// (write_probe.h), kept in the store per folder for kWriteProbeMaxAgeS. It fits when the save
// takes at most 1/kGraceMargin of the grace: the rest is for the step in flight to be abandoned,
// the processes to exit, and the ranks of one node sharing its link. A cached rate outside
// [kMinWriteGbps, kMaxWriteGbps] (negative, zero, faster than any storage: a damaged or hand-made
// row) is not used: the folder is probed again and the cache rewritten. `baton submit` and
// `baton resume` both weigh through CheckGrace and export its grace to the job (BATON_GRACE_S,
// schema/grace_seconds.h). Thread-compatible (the store's rules).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/records.h"
#include "orchestrator/store/store.h"
#include "schema/memory_plan_report.h"
#include "schema/run_config.h"
#include "schema/status.h"

namespace baton {

inline constexpr double kGraceMargin = 1.5;
inline constexpr double kWriteProbeMaxAgeS = 24 * 3600;
// The write rates a measurement can give, GB/s: 100 kB/s to 1 TB/s.
inline constexpr double kMinWriteGbps = 1e-4;
inline constexpr double kMaxWriteGbps = 1000;

// `store` may be null (a dry run): the probe then runs without its cache. `probe_folder` is an
// existing folder on the filesystem of the run folder. run_id of the result is 0.
[[nodiscard]] Result<StopSaveBudgetRecord> PlanStopSave(const RunConfig& config,
                                                        int64_t bytes_per_rank, SlurmClient& slurm,
                                                        Store* store,
                                                        const std::string& probe_folder,
                                                        double now);

// Whether `gbps` is a write rate a measurement can give (kMinWriteGbps..kMaxWriteGbps).
bool PlausibleWriteRate(double gbps);

// The warning for a budget that does not fit, naming the figures and the levers; "" when it fits.
std::string StopSaveWarning(const StopSaveBudgetRecord& b, const RunConfig& config);

// What the grace check of a submit or a resume gave: the budget (none when it could not be made)
// and the warnings for stderr.
struct GraceCheck {
  std::optional<StopSaveBudgetRecord> budget;
  std::vector<std::string> warnings;
};

// The grace check of `baton submit` and `baton resume` (`config_path` names the file in errors).
// `plan` null: no plan (`no_plan` says why), so only a warning. A budget that does not fit, or
// one that could not be made, is a warning, or with `strict` a kConfig refusal. A folder that
// cannot take the probe is its kIo error.
[[nodiscard]] Status CheckGrace(const RunConfig& config, const std::string& config_path,
                                bool strict, const MemoryPlanReport* plan,
                                const std::string& no_plan, SlurmClient& slurm, Store* store,
                                const std::string& probe_folder, double now, GraceCheck* out);

// BATON_GRACE_S's value for the job script: the budget's grace, "" without a budget.
std::string GraceEnvValue(const GraceCheck& check);

}  // namespace baton
