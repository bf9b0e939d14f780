// Plain records the store reads and writes: runs, attempts, steps, micro-steps, checkpoints.
//
// These mirror the tables of schema/sql/ (docs/store.md) and are what the CLI, reconcile, ingest
// and (later) the HTTP layer pass around; none of them speaks SQL. Value types; thread-compatible.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "schema/vocabularies.h"

namespace baton {

enum class RunStatus { kPending, kRunning, kRequeued, kCompleted, kFailed, kCancelled };
// A run's status by its name (Name, Find: schema/vocabularies.h), as the store, the CLI and the
// API spell it.
template <>
struct Vocabulary<RunStatus> {
  static constexpr Word<RunStatus> kWords[] = {
      {RunStatus::kPending, "PENDING"},   {RunStatus::kRunning, "RUNNING"},
      {RunStatus::kRequeued, "REQUEUED"}, {RunStatus::kCompleted, "COMPLETED"},
      {RunStatus::kFailed, "FAILED"},     {RunStatus::kCancelled, "CANCELLED"}};
};
// COMPLETED, FAILED and CANCELLED never change again (ingest and reconcile leave them alone).
bool IsTerminal(RunStatus status);

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();  // SQL NULL

struct RunRecord {
  int64_t id = 0;
  std::string name;
  RunStatus status = RunStatus::kPending;
  std::string reason;
  std::string config;         // frozen run.yaml text
  std::string config_source;  // the file given to `baton submit`
  std::string run_dir;
  int64_t target_steps = 0;
  int64_t max_restarts = 0;
  int64_t max_failures = 0;
  std::string job_id;  // '' until sbatch answered
  double created_at = 0;
  double updated_at = 0;
  std::string partition;  // slurm.partition at submit ('' = default, or submitted before v5)
  // Schema version 11: the Unix user who submitted it, and the SLURM cluster its job runs on
  // (ClusterName, or slurm.cluster); '' for runs submitted before version 11.
  std::string owner;
  std::string cluster;
};

struct AttemptRecord {
  int64_t id = 0;
  int64_t run_id = 0;
  std::string job_id;
  int64_t restart_count = 0;
  std::string nodes;
  std::optional<double> started_at;
  std::optional<double> ended_at;
  std::string slurm_state;
  std::optional<int64_t> exit_code;
  std::string action;              // requeue | done | fail | ''
  std::string end_reason;          // see docs/store.md
  std::string trainer_end_reason;  // segment_end reason: completed | signal | error | diverged
  std::string trainer_message;     // segment_end message (the trainer's one-line error), or ''
  // segment_end exit_code; none without a segment_end (exit_code is the launcher's view)
  std::optional<int64_t> trainer_exit_code;
  std::string resume_mode;  // fresh | exact | weights_only
  std::string checkpoint;
  std::optional<int64_t> step0;
  std::optional<int64_t> last_step;  // steps finished (index of the last one + 1), like step0
  int64_t resume_warmup_steps = 0;
  std::optional<int64_t> warmup_until;
  std::optional<int64_t> world_size;
  std::string config_hash;
  // How it ended, as seen from outside the launcher (schema version 4).
  std::optional<Signal> trainer_signal;  // segment_end's signal; the column holds its word or ''
  std::string slurm_reason;              // SLURM's Reason when reconcile last saw the job, or ''
  std::string slurm_exit_code;           // SLURM's ExitCode "status:signal", or ''
  // The upstream transformer/ folder the weights came from (segment_start init_from), or ''.
  std::string init_from;
  // The requeue hold after this attempt (schema version 7): when the sync pass released it
  // (scontrol update StartTime=now), or SLURM's refusal ('' = none).
  std::optional<double> hold_released_at;
  std::string hold_release_error;
  // Restarts inside one job start (schema version 8): 0 for the job start, then 1, 2, ...; why
  // the launcher restarted the trainer before this attempt (hang | crash; none for seq 0); and
  // the hang that ended it, if one did.
  int64_t in_job_seq = 0;
  std::optional<std::string> restart_cause;
  std::optional<double> hang_last_heartbeat_at;
  std::optional<double> hang_detected_at;
  std::optional<std::string> hang_stale_ranks;
  std::optional<std::string> hang_stack;
  // The SLURM cluster of the job (schema version 11; '' = unknown): part of the attempt's key.
  std::string cluster;
  // Its inline evals (schema version 17): seconds summed, how many, the first one's start and
  // the last one's end (an `eval` event's time is when it ended).
  double eval_s = 0;
  int64_t evals = 0;
  std::optional<double> first_eval_start, last_eval_end;
};

// One optimizer step of one attempt. Doubles are NaN when the event had no value (SQL NULL).
struct StepRecord {
  int64_t run_id = 0;
  int64_t attempt_id = 0;
  int64_t step = 0;
  double time = 0;
  double lr = kNoValue;
  double loss = kNoValue;
  double loss_video = kNoValue;
  double loss_action = kNoValue;
  double grad_norm = kNoValue;
  int64_t tokens = 0;
  int64_t padded_tokens = 0;
  int64_t samples = 0;
  int64_t valid_frames = 0;
  int64_t padded_frames = 0;
  double step_time_s = kNoValue;
  double tokens_per_s = kNoValue;
  bool in_warmup = false;
  int64_t epoch = 0;
  bool superseded = false;  // set by the store, never by the caller
  // The step's loss or gradient norm was NaN/Inf and the step was not applied (the trainer left
  // weights and optimizer state untouched); its losses are then usually NaN (SQL NULL).
  bool nonfinite = false;
  std::vector<std::string> nonfinite_episodes;  // episode ids of the whole step (all ranks)
};

struct MicrostepRecord {
  int64_t run_id = 0;
  int64_t attempt_id = 0;
  int64_t step = 0;
  int64_t micro = 0;
  int64_t tokens = 0;
  double fwd_bwd_s = kNoValue;
  int64_t peak_bytes = 0;
};

struct CheckpointRecord {
  int64_t run_id = 0;
  int64_t step = 0;
  std::optional<int64_t> attempt_id;
  std::string path;
  int64_t bytes = 0;
  double seconds = kNoValue;
  std::string reason;  // periodic | final | signal
  bool valid = true;
  double time = 0;
};

// The stop save `baton submit` predicted for a run against the preemption grace (schema
// version 10): the largest rank's checkpoint bytes over the checkpoint folder's write rate.
struct StopSaveBudgetRecord {
  int64_t run_id = 0;
  double grace_s = 0;
  std::string grace_source;  // where grace_s came from, in words
  int64_t bytes_per_rank = 0;
  double write_gbps = 0;
  std::string write_source;  // "checkpoint.write_gbps", or the probe that measured it
  double predicted_s = 0;
  bool fits = false;  // with the margin (docs/orchestrator.md, "Grace budget")
  double checked_at = 0;
};

// A checkpoint folder's fsync'd sequential write rate, from a short probe (schema version 10).
struct WriteProbeRecord {
  std::string folder;
  double gbps = 0;
  int64_t bytes = 0;  // written by the probe
  double measured_at = 0;
};

}  // namespace baton
