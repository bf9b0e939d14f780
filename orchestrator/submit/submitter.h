// SubmitRun: `baton submit` without the command line — validate, create the run, render and
// submit its batch script, record the job.
//
// All or nothing: the run row is inserted inside one BEGIN IMMEDIATE transaction that also
// records the job id, and sbatch runs inside it. If validation, the run directory, the script or
// sbatch fails, the transaction rolls back and the files this call created are removed, so a
// failed submit leaves no run row and no run directory. (If the commit itself fails after sbatch
// succeeded, the job is cancelled.) The write lock is held for the duration of one sbatch call
// (normally well under a second; other writers wait up to the busy timeout).
// A config that states a memory per rank (slurm.gpu_memory_gb / mem_per_task_gb) is refused
// before anything is created when the trainer's memory plan exceeds it (memory_check.h), dry run
// included. Then the stop save is weighed against the preemption grace (grace_check.h), and the
// run's storage forecast against the run folder's free space and quota (storage_check.h): each a
// warning when it does not fit, a refusal with `strict`. Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "orchestrator/nodes/node_policy.h"
#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"
#include "schema/storage_forecast.h"

namespace baton {

struct SubmitRequest {
  std::string config_path;
  std::string name;        // overrides run.name when not empty
  bool dry_run = false;    // render only: no row, no folder, no sbatch
  std::string baton_bin;   // absolute path written into sbatch.sh
  std::string baton_home;  // where runs/ lives (BatonHome())
  // baton-train, for the memory plan when the config states a memory per rank (memory_check.h);
  // "" when none was found.
  std::string trainer_bin;
  // A stop save that does not fit the preemption grace (grace_check.h) refuses the run (kConfig,
  // 78) instead of warning; so does a grace that could not be checked. A storage forecast that
  // does not fit refuses it too (kIo, 74).
  bool strict = false;
};

struct SubmitResult {
  int64_t run_id = 0;  // 0 for a dry run
  std::string name;
  std::string job_id;  // "" for a dry run
  std::string run_dir;
  std::string script;  // the rendered sbatch.sh
  // The stop save weighed against the grace (also stored, for a real submit); none when it could
  // not be checked (`warnings` says why).
  std::optional<StopSaveBudgetRecord> budget;
  // The storage forecast (storage_check.h); none without a plan.
  std::optional<StorageForecast> storage;
  std::vector<std::string> warnings;  // for stderr
  // Excluded nodes the cap kept in the new job's list (also in `warnings`); the caller records
  // and alerts them once the run exists (node_ledger.h RecordExclusionRefusal).
  std::vector<ExclusionPlan::Refused> exclusion_refused;
};

// `store` may be null for a dry run.
[[nodiscard]] Result<SubmitResult> SubmitRun(Store* store, SlurmClient& slurm,
                                             const SubmitRequest& request, double now);

}  // namespace baton
