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
// the processes to exit, and the ranks of one node sharing its link. Thread-compatible (the
// store's rules).
#pragma once

#include <cstdint>
#include <string>

#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/records.h"
#include "orchestrator/store/store.h"
#include "schema/run_config.h"
#include "schema/status.h"

namespace baton {

inline constexpr double kGraceMargin = 1.5;
inline constexpr double kWriteProbeMaxAgeS = 24 * 3600;

// `store` may be null (a dry run): the probe then runs without its cache. `probe_folder` is an
// existing folder on the filesystem of the run folder. run_id of the result is 0.
[[nodiscard]] Result<StopSaveBudgetRecord> PlanStopSave(const RunConfig& config,
                                                        int64_t bytes_per_rank, SlurmClient& slurm,
                                                        Store* store,
                                                        const std::string& probe_folder,
                                                        double now);

// The warning for a budget that does not fit, naming the figures and the levers; "" when it fits.
std::string StopSaveWarning(const StopSaveBudgetRecord& b, const RunConfig& config);

}  // namespace baton
