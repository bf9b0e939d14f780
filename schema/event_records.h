// The event records, one struct each, with the JSON both sides use: the trainer and the launcher
// write them (ToJson through EventWriter), ingest reads them (FromJson). docs/events.md is their
// prose; the key names live here and nowhere else.
//
// FromJson is lenient the way ingest must be with files written by older builds or cut short:
// a missing, null or non-finite number is "no value" (NaN, or an empty optional), an integer
// outside int64 is no value rather than a wrapped one, a wrong type is the fallback. It throws
// nothing; a record without what identifies it (a step without "step") is reported by the
// caller. Plain values; thread-safe.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/vocabularies.h"

namespace baton {

// ---- The words of the protocol. ---------------------------------------------------------------

// The words are closed vocabularies (schema/vocabularies.h: Name, Find, Parse). The reasons and
// actions stay text in the records below and in the store: ingest keeps a word it does not know
// (a newer build's) and shows it, rather than dropping it. The signal is an enum in the record:
// the trainer only ever writes one of four.

// Why a trainer segment ended (segment_end "reason").
enum class SegmentEndReason { kCompleted, kSignal, kError, kDiverged };

// Why the trainer wrote a checkpoint (checkpoint "reason"): every checkpoint.every steps, at the
// last step, or for a stop signal.
enum class SaveReason { kPeriodic, kFinal, kSignal };

// What the launcher does after the trainer exits (attempt_end "action"); kRestart: start the
// trainer again inside the same allocation (a hang, or a crash that is not the run's fault).
enum class ExitAction { kRequeue, kDone, kFail, kRestart };

// Why an attempt ended (attempt_end "reason"; reconcile adds node_failure and lost from SLURM's
// view, for attempts the launcher could not close).
enum class AttemptEndReason {
  kCompleted,
  kPreempted,
  kTimeout,
  kCrashed,
  kConfigError,
  kDataError,
  kDiverged,
  kFailureBudget,
  kRestartBudget,
  kNoProgress,
  kCancelled,
  kLaunchError,
  kRequeueFailed,
  kNodeFailure,    // reconcile: SLURM says the node failed
  kLost,           // reconcile: the job is gone from SLURM without an attempt_end
  kHang,           // launcher: a rank's heartbeat went stale (docs/orchestrator.md, "Hangs")
  kNodeUnhealthy,  // launcher: a node failed the preflight (docs/nodes.md, "Preflight")
};

template <>
struct Vocabulary<SegmentEndReason> {
  static constexpr Word<SegmentEndReason> kWords[] = {{SegmentEndReason::kCompleted, "completed"},
                                                      {SegmentEndReason::kSignal, "signal"},
                                                      {SegmentEndReason::kError, "error"},
                                                      {SegmentEndReason::kDiverged, "diverged"}};
};
template <>
struct Vocabulary<SaveReason> {
  static constexpr Word<SaveReason> kWords[] = {{SaveReason::kPeriodic, "periodic"},
                                                {SaveReason::kFinal, "final"},
                                                {SaveReason::kSignal, "signal"}};
};
template <>
struct Vocabulary<ExitAction> {
  static constexpr Word<ExitAction> kWords[] = {{ExitAction::kRequeue, "requeue"},
                                                {ExitAction::kDone, "done"},
                                                {ExitAction::kFail, "fail"},
                                                {ExitAction::kRestart, "restart"}};
};
template <>
struct Vocabulary<AttemptEndReason> {
  using R = AttemptEndReason;
  static constexpr Word<R> kWords[] = {{R::kCompleted, "completed"},
                                       {R::kPreempted, "preempted"},
                                       {R::kTimeout, "timeout"},
                                       {R::kCrashed, "crashed"},
                                       {R::kConfigError, "config_error"},
                                       {R::kDataError, "data_error"},
                                       {R::kDiverged, "diverged"},
                                       {R::kFailureBudget, "failure_budget"},
                                       {R::kRestartBudget, "restart_budget"},
                                       {R::kNoProgress, "no_progress"},
                                       {R::kCancelled, "cancelled"},
                                       {R::kLaunchError, "launch_error"},
                                       {R::kRequeueFailed, "requeue_failed"},
                                       {R::kNodeFailure, "node_failure"},
                                       {R::kLost, "lost"},
                                       {R::kHang, "hang"},
                                       {R::kNodeUnhealthy, "node_unhealthy"}};
};

// ---- The records. Every record also carries "type", "time" and "source" (EventWriter). --------

inline constexpr double kNoNumber = std::numeric_limits<double>::quiet_NaN();

// Trainer, rank 0: a segment began.
struct SegmentStartEvent {
  static constexpr const char* kType = "segment_start";
  std::string mode;  // Name(ResumeMode)
  std::optional<int64_t> step0;
  int64_t target_steps = 0;
  std::optional<int64_t> resume_warmup_steps;
  std::optional<int64_t> warmup_until;  // first step index at full LR (LrSchedule::WarmupUntil)
  std::optional<std::string> checkpoint;
  // The upstream transformer/ folder the weights came from (model.init_from / --init-from) when
  // the segment started fresh from one; empty otherwise (and in events written before it).
  std::string init_from;
  std::vector<std::string> skipped;
  std::optional<int64_t> world_size;
  double load_seconds = kNoNumber;
  std::string config_hash, job_id;
  int64_t restart_count = 0;
  nlohmann::json ToJson() const;
  static SegmentStartEvent FromJson(const nlohmann::json& j);
};

// Trainer, rank 0: one optimizer step (0-based index `step`).
struct StepEvent {
  static constexpr const char* kType = "step";
  std::optional<int64_t> step;
  double lr = kNoNumber, loss = kNoNumber, loss_video = kNoNumber, loss_action = kNoNumber;
  double grad_norm = kNoNumber;
  int64_t tokens = 0, padded_tokens = 0, samples = 0, valid_frames = 0, padded_frames = 0;
  double step_time_s = kNoNumber, tokens_per_s = kNoNumber;
  bool in_warmup = false;
  int64_t epoch = 0;
  // Not applied: the loss or gradient norm was NaN/Inf (docs/trainer.md).
  bool nonfinite = false;
  std::vector<std::string> nonfinite_episodes;
  int64_t consecutive_nonfinite = 0;
  nlohmann::json ToJson() const;
  static StepEvent FromJson(const nlohmann::json& j);
};

// Trainer, rank 0, when profiling: one micro-step.
struct MicrostepEvent {
  static constexpr const char* kType = "microstep";
  int64_t step = 0, micro = 0, tokens = 0;
  double fwd_bwd_s = kNoNumber;
  int64_t peak_bytes = 0;
  nlohmann::json ToJson() const;
  static MicrostepEvent FromJson(const nlohmann::json& j);
};

// Trainer, rank 0: a checkpoint was written (`step` finished steps, as in its folder name).
struct CheckpointEvent {
  static constexpr const char* kType = "checkpoint";
  std::optional<int64_t> step;
  std::string path;
  int64_t bytes = 0;
  double seconds = kNoNumber;
  std::string reason;  // Name(SaveReason)
  nlohmann::json ToJson() const;
  static CheckpointEvent FromJson(const nlohmann::json& j);
};

// Trainer (an inline eval, rank 0) or `baton-train eval` (an eval job): a committed checkpoint's
// held-out value (docs/eval.md). `step` is the checkpoint's step; the metrics are the
// flow-matching validation loss and its video and action parts at the eval's fixed draws.
struct EvalEvent {
  static constexpr const char* kType = "eval";
  std::optional<int64_t> step;
  std::string checkpoint;  // the checkpoint folder evaluated
  std::string mode;        // Name(EvalMode)
  double loss = kNoNumber, loss_video = kNoNumber, loss_action = kNoNumber;
  int64_t episodes = 0, valid_frames = 0;
  double seconds = kNoNumber;
  std::string config_hash;
  std::string job_id;  // the job that computed it (the training job inline, the eval job's)
  nlohmann::json ToJson() const;
  static EvalEvent FromJson(const nlohmann::json& j);
};

// Trainer, any rank on an error, else rank 0: the segment ended (`step` finished steps).
struct SegmentEndEvent {
  static constexpr const char* kType = "segment_end";
  std::optional<int64_t> step;
  std::string reason;            // Name(SegmentEndReason)
  std::optional<Signal> signal;  // when reason is signal; a word this build does not know: none
  std::optional<int64_t> exit_code;
  std::optional<int64_t> rank;  // the rank that failed (error records)
  std::string message;          // error | diverged: the trainer's one-line reason
  nlohmann::json ToJson() const;
  static SegmentEndEvent FromJson(const nlohmann::json& j);
};

// Launcher: the job started and what it decided.
struct AttemptStartEvent {
  static constexpr const char* kType = "attempt_start";
  std::string job_id;
  int64_t restart_count = 0;
  std::string nodes;
  std::optional<std::string> checkpoint;
  std::string mode;  // Name(ResumeMode)
  std::optional<int64_t> step0;
  int64_t resume_warmup_steps = 0;
  std::vector<std::string> skipped_checkpoints;
  // Restarts inside the job: 0 for the job start itself, then 1, 2, ...; the cause of a restart
  // (hang | crash; empty for seq 0).
  int64_t in_job_seq = 0;
  std::string restart_cause;
  nlohmann::json ToJson() const;
  static AttemptStartEvent FromJson(const nlohmann::json& j);
};

// Launcher: the trainer exited and what the launcher does about it.
struct AttemptEndEvent {
  static constexpr const char* kType = "attempt_end";
  std::string job_id;
  int64_t restart_count = 0;
  std::optional<int64_t> exit_code;
  std::string action;  // Name(ExitAction)
  std::string reason;  // Name(AttemptEndReason)
  int64_t in_job_seq = 0;
  // A hang (reason hang): the newest heartbeat of the stale ranks (Unix seconds), when the
  // launcher declared it, the stale ranks with their last phase ("1:micro-step,0:update") and
  // every thread's stack of each stale rank (cut to kMaxHangStackBytes; the job log has it whole).
  std::optional<double> hang_last_heartbeat_at, hang_detected_at;
  std::string hang_stale_ranks, hang_stack;
  nlohmann::json ToJson() const;
  static AttemptEndEvent FromJson(const nlohmann::json& j);
};

// The most of a hang's stacks (attempt_end hang_stack) an attempt's record keeps: enough to see
// where every thread of a stuck rank waits. The launcher writes at most this, and ingest cuts
// what any writer sent to it.
inline constexpr size_t kMaxHangStackBytes = 64 << 10;

}  // namespace baton
