// The launcher: `baton launch RUN_DIR`, the in-job entry point (docs/design.md, "The life of a
// run", 2-4).
//
// Inside each SLURM job start it decides how to resume (schema/resume_decision.h), writes an
// `attempt_start` event, runs `srun --kill-on-bad-exit=1 baton-train train ...` with that
// decision spelled out, forwards the warning signal (trainer_process.h), then acts on the exit
// code (exit_policy.h): `scontrol requeue $SLURM_JOB_ID`, done, or fail; and writes
// `attempt_end`. A run folder with `baton cancel`'s mark (RunFolder::CancelMark) is never
// requeued, and a job of such a run that starts anyway ends at once (attempt_end: cancelled). It
// never opens the database: compute nodes only write event files on the shared filesystem, which
// `baton watch` (or any CLI call) ingests. Not thread-safe (signals).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "orchestrator/slurm/slurm_client.h"
#include "schema/resume_decision.h"
#include "schema/status.h"

namespace baton {

struct LaunchEnvironment {
  std::string job_id;          // SLURM_JOB_ID ("<array>_<task>" in an array), or "local-<unix s>"
  int64_t restart_count = 0;   // SLURM_RESTART_COUNT
  std::string nodes;           // SLURM_JOB_NODELIST
  bool in_allocation = false;  // SLURM_JOB_ID is set
  bool use_srun = false;       // in an allocation and BATON_NO_SRUN is not 1
  std::string trainer_bin;     // FindTrainerBinary()
  // This baton, for `baton preflight` on every node (node_checks.h); "" runs none (outside an
  // allocation, BATON_NO_PREFLIGHT=1, or a test's own environment).
  std::string preflight_bin;
};

// launch_environment.cc: the job start's environment and the trainer command.

// The trainer: $BATON_TRAIN_BIN, else baton-train next to this baton, else
// ../trainer/baton-train (the build tree). "" when none is executable.
std::string FindTrainerBinary();

// Reads SLURM_* and BATON_* variables.
LaunchEnvironment LaunchEnvironmentFromProcess();

// The exact command the launcher runs (see docs/orchestrator.md "Trainer command"):
//   [srun --kill-on-bad-exit=1] <trainer> train --config RUN_DIR/run.yaml --run-dir RUN_DIR
//     --resume <checkpoint|none> --expect-mode <mode> --expect-step0 N --resume-warmup K
//     --events <events file>
std::vector<std::string> TrainerCommand(const LaunchEnvironment& env, const std::string& run_dir,
                                        const ResumeDecision& decision,
                                        const std::string& events_path);

// launcher.cc: one attempt.

// Runs one attempt end to end. Returns the process exit code: 0 done, 75 requeued, else the
// failure's code (78 config, 65 data, the trainer's crash code, 69 when nothing could start).
int Launch(const std::string& run_dir, const LaunchEnvironment& env, SlurmClient& slurm,
           std::ostream& log);

}  // namespace baton
