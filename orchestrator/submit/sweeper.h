// `baton sweep` without the command line (docs/sweeps.md): every member of a sweep spec checked
// as `baton submit` checks a run, then all of them created and submitted as ONE SLURM job array.
//
// PrepareSweep does every check and creates nothing: each member's config (the base with its
// values) validated, memory-planned and grace-checked; identical members, more members than the
// cluster's MaxArraySize, members whose SLURM resources differ (one array has one set) or a base
// that fixes run.dir (members need their own folders) refused; the members' storage forecasts
// summed against their shared filesystem (a warning, or with `strict` a refusal, 74). A refusal
// names the member's index, its values and the key. SubmitSweep then, in one store transaction,
// creates the sweep, each member's run row, folder, frozen run.yaml and own sbatch.sh, and the
// sweep's array script, whose SLURM_ARRAY_TASK_ID picks the member's run folder; runs one `sbatch
// --array=0-(N-1)%P`; and records each member's job as "<array>_<index>". Any failure rolls back
// and removes what was created: no run, no folder, no job. Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "orchestrator/nodes/node_policy.h"
#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/store.h"
#include "orchestrator/store/store_sweeps.h"
#include "orchestrator/submit/sweep_spec.h"
#include "schema/run_config.h"
#include "schema/storage_forecast.h"

namespace baton {

struct SweepRequest {
  std::string spec_path;
  std::string name;  // overrides the spec's name when not empty
  bool dry_run = false;
  std::string baton_bin;
  std::string baton_home;
  std::string trainer_bin;
  bool strict = false;
};

struct PreparedMember {
  SweepMember member;
  RunConfig config;        // resolved, with run.name "<sweep>-<index>"
  std::string run_script;  // its own sbatch.sh, for a later `baton resume` of it alone
  std::optional<StopSaveBudgetRecord> budget;
  std::string grace_env;                   // its BATON_GRACE_S ("" without a budget)
  std::optional<StorageForecast> storage;  // its own forecast (storage_check.h)
  int64_t run_id = 0;                      // once created
  std::string run_dir;
  std::string job_id;  // "<array>_<index>" once submitted
};

struct PreparedSweep {
  SweepSpec spec;
  std::string name;
  std::string cluster;
  std::vector<std::string> keys;  // the varied keys, in axis order
  std::vector<PreparedMember> members;
  std::string grace_s;  // BATON_GRACE_S of the array (member 0's)
  // Every member's forecast summed, against the filesystem they share; none when one had none.
  std::optional<StorageForecast> storage;
  std::vector<std::string> warnings;
  // What the exclusion cap kept in the array's node list (the caller records it).
  std::vector<ExclusionPlan::Refused> exclusion_refused;
  int64_t sweep_id = 0;
  std::string sweep_dir;
  std::string array_script;
  std::string job_id;             // the array's
  std::string ArraySpec() const;  // "0-(N-1)%P"
};

[[nodiscard]] Result<PreparedSweep> PrepareSweep(Store* store, SlurmClient& slurm,
                                                 const SweepRequest& request, double now);

// Creates and submits a prepared sweep (sets its ids, folders and job ids).
[[nodiscard]] Status SubmitSweep(Store& store, SlurmClient& slurm, const SweepRequest& request,
                                 PreparedSweep* sweep, double now);

// The array script: the member's #SBATCH lines (shared by all members), SLURM's output in the
// sweep folder per task, and `baton launch` in the folder of the member SLURM_ARRAY_TASK_ID
// names. `member_dirs[i]` is member i's run folder.
[[nodiscard]] Result<std::string> ArrayScript(const std::string& member_script,
                                              const std::string& sweep_dir,
                                              const std::string& baton_bin,
                                              const std::vector<std::string>& member_dirs);

// `baton sweep resume`: every member not COMPLETED and no longer live submitted again, as one
// array over their indexes (--array=i,j,..%P) with the sweep's script; each resumes exactly from
// its own checkpoints. The script's --exclude is first set to what the node ledger excludes now
// (as for `baton submit`; what it cannot apply goes to `warnings`). The members resumed, by
// index; none when every member is COMPLETED or live.
[[nodiscard]] Result<std::vector<int64_t>> ResumeSweep(
    Store& store, SlurmClient& slurm, const SweepRecord& sweep, double now,
    std::vector<std::string>* warnings = nullptr);

// `baton sweep cancel`: scancel of every array the sweep's members are in, and each live member
// marked for cancel as `baton cancel` does. The members cancelled.
[[nodiscard]] Result<int64_t> CancelSweep(Store& store, SlurmClient& slurm,
                                          const SweepRecord& sweep, double now);

}  // namespace baton
