// TrainerEnvironment: what the trainer takes from its process environment besides its rank:
// SLURM's job, restart count and node, the stop grace `baton submit` writes into sbatch.sh, and
// the test hooks of docs/trainer.md. Rank, world, rendezvous and the collective wait limits are
// DistEnv's (process_group.h), read by DistEnvFromEnvironment; in the trainer only
// trainer_environment.cc and dist_env.cc call getenv.
//
// TrainerEnvironmentFromProcess reads every variable once, when a command starts, and the command
// hands the struct down. It never fails: a value with rules of its own (seconds, a signal spec)
// is kept as written and checked by the part that uses it, when it is used, so a malformed one
// still ends a segment with its segment_end record. Plain values; copy freely.
#pragma once

#include <cstdint>
#include <string>

namespace baton {

// The launcher's hang and restart tests:
//   BATON_TEST_SAVE_SLEEP_S        every rank sleeps this long inside each save (a slow save)
//   BATON_TEST_FIRST_STEP_SLEEP_S  every rank sleeps this long in the segment's first step
//   BATON_TEST_CRASH_AT_STEP=K     rank BATON_TEST_CRASH_RANK (0) kills itself (SIGKILL) as step
//                                  index K starts, in every segment that reaches it
// A value that is not a number is taken as unset.
struct HeartbeatTestHooks {
  double save_sleep_s = 0;
  double first_step_sleep_s = 0;
  int64_t crash_at_step = -1;
  int64_t crash_rank = 0;
};

// The optimizer step's: a slow block, and a real SIGUSR1 at a chosen boundary of one rank.
struct StepperTestHooks {
  int64_t block_sleep_us = 0;  // BATON_TEST_BLOCK_SLEEP_MS, slept in every block
  std::string signal_at;       // BATON_TEST_SIGNAL_AT, "PHASE:STEP[:MICRO[:BLOCK]][@RANK]"
};

struct TrainerEnvironment {
  std::string job_id;         // SLURM_JOB_ID; "" outside SLURM
  int64_t restart_count = 0;  // SLURM_RESTART_COUNT
  std::string node_name;      // SLURMD_NODENAME; "" outside SLURM
  // As written ("" when unset), each checked where it is used.
  std::string grace_s;      // BATON_GRACE_S (ParseGraceSeconds)
  std::string episode_log;  // BATON_EPISODE_LOG: every rank's episodes, to <path>.<rank>

  // Tests only.
  StepperTestHooks stepper;
  HeartbeatTestHooks heartbeat;
  bool widen_after_backward = false;  // BATON_TEST_WIDEN_AFTER_BACKWARD=1
  std::string ckpt_write_delay_ms;    // BATON_TEST_CKPT_WRITE_DELAY_MS, as written

  // The job in the run's file names: SLURM_JOB_ID, or "local" outside SLURM.
  std::string JobOrLocal() const { return job_id.empty() ? "local" : job_id; }
};

TrainerEnvironment TrainerEnvironmentFromProcess();

}  // namespace baton
