// ResumeRun: `baton resume RUN [--config CFG]` without the command line — continue a run that
// stopped (CANCELLED, FAILED) or waits (PENDING, REQUEUED and its job not running) as a new SLURM
// job in the same run folder, optionally with other `slurm:` settings (e.g. fewer nodes when only
// one is free). The trainer resumes from the run's newest valid checkpoint as always; a changed
// world size keeps the data position (docs/trainer.md, resharding).
//
// Only `slurm:` keys may differ from the frozen run.yaml: anything else would make the run a
// different run, and is refused (kConfig, naming every differing key with both values). An edited
// config's memory plan is checked as `baton submit` checks it (memory_check.h): fewer ranks or
// less memory may no longer fit; the frozen one is checked again too. The stop save is weighed
// against the grace as at submit (grace_check.h): the new job's script exports that grace
// (BATON_GRACE_S), the run's stored budget is replaced, and a budget that does not fit warns, or
// with `strict` refuses.
// All or nothing, like SubmitRun: sbatch runs inside the store transaction; the waiting job is
// cancelled only after the new one is queued; run.yaml and sbatch.sh are replaced atomically and
// restored when anything after them fails. Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "orchestrator/nodes/node_policy.h"
#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

struct ResumeRunRequest {
  std::string run;          // id or name
  std::string config_path;  // "" keeps run.yaml as it is
  std::string baton_bin;    // absolute path written into sbatch.sh
  std::string trainer_bin;  // for the memory plan and the stop save's size ("" when none)
  bool strict = false;      // refuse a stop save that does not fit the grace, as submit --strict
};

struct ResumeRunResult {
  int64_t run_id = 0;
  std::string name;
  std::string run_dir;
  std::string previous_status;
  std::string cancelled_job;         // the waiting job taken back ("" when none)
  std::string job_id;                // the new job
  std::vector<std::string> changed;  // "slurm.nodes: 2 -> 1"
  // The stop save weighed against the grace (stored for the run); none when it could not be
  // checked (`warnings` says why).
  std::optional<StopSaveBudgetRecord> budget;
  std::vector<std::string> warnings;  // for stderr
  // What the exclusion cap kept in the new job's node list (the caller records it).
  std::vector<ExclusionPlan::Refused> exclusion_refused;
};

// The `section.key: old -> new` lines between two resolved configs (ToYaml of each), sorted.
[[nodiscard]] Result<std::vector<std::string>> ConfigDifferences(const std::string& old_yaml,
                                                                 const std::string& new_yaml);

[[nodiscard]] Result<ResumeRunResult> ResumeRun(Store& store, SlurmClient& slurm,
                                                const ResumeRunRequest& request, double now);

}  // namespace baton
