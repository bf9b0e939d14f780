// The batch script of an eval job (eval.mode job; docs/eval.md, "Eval jobs"), rendered from
// slurm/eval_job.sh.in (embedded at build time) the way a run's sbatch.sh is (sbatch_script.h).
//
// Its request is the eval: section's (eval.partition, eval.time, eval.cpus_per_task), each
// falling back to the run's slurm: value when empty or 0; qos, account, memory per CPU, the
// warning signal and its lead come from the run; a run on GPUs gets one. It asks SLURM to
// requeue it (--requeue) and, on the warning signal, does what the launcher does for a training
// job: stops the eval, requeues a preempted job unless SLURM already did, and lets one stopped at
// its time limit fail. Every #SBATCH value is checked (kConfig naming the key); paths are
// shell-quoted. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "schema/run_config.h"
#include "schema/status.h"

namespace baton {

struct EvalJobParams {
  int64_t run_id = 0;
  std::string run_name;
  std::string run_dir;      // absolute
  int64_t step = 0;         // the checkpoint's
  int64_t attempt = 1;      // 1, or 2 for the retry
  std::string trainer_bin;  // absolute path of the baton-train the job runs
};

// The resolved request of an eval job.
struct EvalJobRequest {
  std::string partition;  // '' = the cluster's default
  std::string time;
  int64_t cpus_per_task = 1;
};
EvalJobRequest EvalJobRequestOf(const RunConfig& config);

// "[D-]HH:MM:SS" and the other forms SLURM takes for --time, in seconds; -1 for UNLIMITED or a
// value that is none of them.
int64_t SlurmTimeSeconds(const std::string& time);

// <run>/eval_jobs/step_<N>.<attempt>.sh: where the script is written before sbatch.
std::string EvalJobScriptPath(const std::string& run_dir, int64_t step, int64_t attempt);

// The rendered script. `config` is the run's frozen config (its source names the file).
[[nodiscard]] Result<std::string> RenderEvalJobScript(const RunConfig& config,
                                                      const EvalJobParams& params);

}  // namespace baton
