// Where a run's wall time went: the time since `baton submit` split into buckets that add up to
// it, per attempt and for the run, and the effective training time ratio (ETTR = productive /
// wall). One pure function over the run's records; the store keeps its answer current
// (time_bucket_store.h) and the CLI, the API and the run page show it (docs/store.md).
//
// The timeline, cut at the records' own times (Unix seconds):
//
//   submit ─queue─ start ─startup─ first step ─steps, saves, other─ last step/save ─tail─ end
//          (gap before the next attempt) ─ requeue_hold ─ queue_after_requeue ─ start ...
//
//   queue                pending before the first start (and before a start after a stop that
//                        was not a requeue, e.g. `baton resume` of a failed run; a requeue is
//                        the launcher's action `requeue`, or a next start of the same job)
//   requeue_hold         SLURM's BeginTime hold after a requeue: end → hold_released_at when the
//                        sync pass released it, else at most kAssumedRequeueHoldS of the gap
//   queue_after_requeue  the rest of the gap after a requeue, up to the next start
//   restart              end → start of the next attempt inside the same job (in_job_seq > 0)
//   startup              start → the first step (or save) begins: launch, process start, init,
//                        checkpoint load
//   productive           step_time_s of the steps that count: effective rows (not superseded)
//                        that were applied (not non-finite)
//   rolled_back          step_time_s of rows a later attempt re-did (superseded: beyond the step
//                        the next attempt resumed from)
//   skipped              step_time_s of effective rows the trainer did not apply (NaN/Inf)
//   checkpoint_stall     the blocking part of saves: the checkpoint event's `seconds`
//   eval                 inline evals (eval.mode inline) between steps: the `eval` events'
//                        `seconds`
//   other                the rest between the first and the last step or save (logging, data
//                        waits outside a step), the tail of an attempt that crashed or is still
//                        running, and last step → last heartbeat of a hung one
//   stop                 the tail after the last step or save of an attempt stopped by a signal
//                        (preempted, timeout, cancelled: the stop signal → exit), or hang
//                        verdict → exit
//   hang_detection       last heartbeat → hang verdict (attempts.hang_last_heartbeat_at,
//                        hang_detected_at)
//
// Every interval is clipped to the one before it, so the buckets add up to the wall time
// exactly. Between an attempt's first and last step, save or eval, steps count first, then
// saves, then evals, each only for the room left: records whose times overlap (one trainer never
// writes them: rank 0 writes each after its work, and saves between steps) are not counted twice. A
// still-live run's wall ends at `now`. Thread-safe (pure).
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"

namespace baton {

enum class TimeBucket {
  kQueue,
  kRequeueHold,
  kQueueAfterRequeue,
  kRestart,
  kStartup,
  kProductive,
  kRolledBack,
  kSkipped,
  kCheckpointStall,
  kEval,
  kOther,
  kStop,
  kHangDetection,
};

// "queue", "requeue_hold", ...: the names of the JSON keys and (with "_s") the SQL columns
// (Name: schema/vocabularies.h).
template <>
struct Vocabulary<TimeBucket> {
  static constexpr Word<TimeBucket> kWords[] = {
      {TimeBucket::kQueue, "queue"},
      {TimeBucket::kRequeueHold, "requeue_hold"},
      {TimeBucket::kQueueAfterRequeue, "queue_after_requeue"},
      {TimeBucket::kRestart, "restart"},
      {TimeBucket::kStartup, "startup"},
      {TimeBucket::kProductive, "productive"},
      {TimeBucket::kRolledBack, "rolled_back"},
      {TimeBucket::kSkipped, "skipped"},
      {TimeBucket::kCheckpointStall, "checkpoint_stall"},
      {TimeBucket::kEval, "eval"},
      {TimeBucket::kOther, "other"},
      {TimeBucket::kStop, "stop"},
      {TimeBucket::kHangDetection, "hang_detection"}};
};
// The buckets, counted from their table (which is in enum order: TimeBuckets::s is indexed by it).
inline constexpr size_t kTimeBucketCount = std::size(Vocabulary<TimeBucket>::kWords);
const std::array<TimeBucket, kTimeBucketCount>& AllTimeBuckets();

// The hold SLURM puts on a requeued job when the sync pass did not release it: BeginTime =
// requeue + cred_expire (120 s by default) + 1 s. Seconds.
inline constexpr double kAssumedRequeueHoldS = 121.0;

// One attempt as the buckets need it: its record's times and how it ended, and what its step
// rows and saves add up to (AddStepRow / AddSave build these from records).
struct BucketAttempt {
  int64_t attempt_id = 0;
  std::string job_id;  // a next attempt of the same job after this one was a requeue
  std::optional<double> started_at, ended_at;
  std::string action;              // requeue | done | fail | ''
  std::string end_reason;          // preempted, crashed, ...
  std::string trainer_end_reason;  // signal, completed, error, ...
  std::optional<double> hold_released_at;
  // Restarted inside the same allocation (0: the job's own start).
  int64_t in_job_seq = 0;
  // Hang detection (last heartbeat seen, verdict).
  std::optional<double> hang_last_heartbeat_at, hang_detected_at;

  // Steps: the first one's start (time - step_time_s), the last one's end (its time).
  std::optional<double> first_step_start, last_step_end;
  double productive_s = 0, rolled_back_s = 0, skipped_s = 0;
  int64_t productive_steps = 0;
  // Saves: blocking seconds, count, first start and last end.
  double save_s = 0;
  int64_t saves = 0;
  std::optional<double> first_save_start, last_save_end;
  // Inline evals: seconds, first start and last end.
  double eval_s = 0;
  std::optional<double> first_eval_start, last_eval_end;
};

// Adds one step row (its store flags say which bucket) or one save of the attempt.
void AddStepRow(BucketAttempt* a, const StepRecord& s);
void AddSave(BucketAttempt* a, const CheckpointRecord& c);
// The record's own fields (times, how it ended, the hold release, restarts, hangs, evals).
BucketAttempt BucketAttemptFrom(const AttemptRecord& a);

struct BucketInput {
  double submitted_at = 0;              // runs.created_at
  std::vector<BucketAttempt> attempts;  // in the order they happened
  bool run_terminal = false;  // COMPLETED, FAILED, CANCELLED: the wall ends at the last end
  double now = 0;             // the end of a live run's wall
};

struct TimeBuckets {
  std::array<double, kTimeBucketCount> s{};  // seconds per bucket, by TimeBucket
  double wall_s = 0;
  int64_t productive_steps = 0;
  int64_t saves = 0;
  double save_s = 0;
  double& operator[](TimeBucket b) { return s[static_cast<size_t>(b)]; }
  double operator[](TimeBucket b) const { return s[static_cast<size_t>(b)]; }
  double Sum() const;
};

struct AttemptTimeBuckets {
  int64_t attempt_id = 0;
  // The gap before the attempt (from submit, or from the previous attempt's end) and its own
  // start → end; wall_s is that span.
  TimeBuckets buckets;
  bool interrupted = false;  // ended other than completed (a preemption, crash, hang, ...)
};

struct RunTimeBuckets {
  TimeBuckets run;  // submit → the last end (now while live), the attempts' buckets summed
  std::vector<AttemptTimeBuckets> attempts;
  int64_t interruptions = 0;
  double running_s = 0;  // summed attempt start → end: the time between interruptions
  double as_of = 0;      // when computed (the wall's end of a live run)
};

RunTimeBuckets ComputeTimeBuckets(const BucketInput& in);

// productive / wall, and productive / (wall - queue - queue_after_requeue); none without wall.
std::optional<double> Ettr(const TimeBuckets& b);
std::optional<double> EttrWithoutQueue(const TimeBuckets& b);

// The checkpoint interval that minimises lost time (Young/Daly: sqrt(2 · save stall · mean time
// between interruptions)) from the run's own measurements. `reason` says why there is none
// ("not enough interruptions", "no checkpoint saves measured").
struct CheckpointIntervalAdvice {
  std::optional<double> seconds, steps;
  double mean_save_s = 0;
  std::optional<double> mean_time_between_interruptions_s;
  int64_t interruptions = 0;
  std::string reason;
};
CheckpointIntervalAdvice AdviseCheckpointInterval(const RunTimeBuckets& r);

}  // namespace baton
