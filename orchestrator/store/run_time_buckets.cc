#include "orchestrator/store/run_time_buckets.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "schema/event_records.h"

namespace baton {

namespace {

// Every bucket in enum order, read off its vocabulary table (the one list of the buckets).
constexpr std::array<TimeBucket, kTimeBucketCount> AllInTableOrder() {
  std::array<TimeBucket, kTimeBucketCount> all{};
  for (size_t i = 0; i < kTimeBucketCount; ++i) all[i] = Vocabulary<TimeBucket>::kWords[i].value;
  return all;
}
constexpr std::array<TimeBucket, kTimeBucketCount> kAll = AllInTableOrder();

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kTimeBucketCount; ++i) {
    if (static_cast<size_t>(kAll[i]) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "Vocabulary<TimeBucket> must list the buckets in enum order");

bool Finite(double v) { return std::isfinite(v); }

std::optional<double> Min(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}
std::optional<double> Max(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}
double Clamp(double v, double lo, double hi) { return std::max(lo, std::min(v, hi)); }

// Ended by a stop signal: the tail after its last step or save is the stop (signal → exit).
bool StoppedBySignal(const BucketAttempt& a) {
  using R = AttemptEndReason;
  return IsOneOf(a.trainer_end_reason, {SegmentEndReason::kSignal}) ||
         IsOneOf(a.end_reason, {R::kPreempted, R::kTimeout, R::kCancelled, R::kRestartBudget});
}

// An end the run recovers from by starting again: what Young/Daly calls an interruption.
bool Interrupted(const BucketAttempt& a) {
  if (!a.ended_at) return false;
  if (a.hang_detected_at) return true;
  using R = AttemptEndReason;
  return IsOneOf(a.end_reason,
                 {R::kPreempted, R::kTimeout, R::kNodeFailure, R::kCrashed, R::kLost,
                  R::kFailureBudget, R::kRestartBudget, R::kNoProgress, R::kNodeUnhealthy});
}

// The gap [from, to] before attempt `next` (after `prev`, or after submit when there is none).
void AddGap(TimeBuckets* b, const BucketAttempt* prev, const BucketAttempt* next, double from,
            double to) {
  const double gap = std::max(0.0, to - from);
  if (prev == nullptr) {
    (*b)[TimeBucket::kQueue] += gap;
    return;
  }
  if (next != nullptr && next->in_job_seq > 0) {
    (*b)[TimeBucket::kRestart] += gap;
    return;
  }
  // SLURM requeued the job itself when the launcher could not say so (reconcile closed the
  // attempt): the next start of the same job comes after the same hold.
  const bool requeued = prev->action == "requeue" ||
                        (next != nullptr && !prev->job_id.empty() && next->job_id == prev->job_id);
  if (!requeued) {  // stopped, then `baton resume`: waiting like a submit
    (*b)[TimeBucket::kQueue] += gap;
    return;
  }
  const double hold_end = prev->hold_released_at
                              ? Clamp(*prev->hold_released_at, from, std::max(from, to))
                              : std::min(std::max(from, to), from + kAssumedRequeueHoldS);
  (*b)[TimeBucket::kRequeueHold] += hold_end - from;
  (*b)[TimeBucket::kQueueAfterRequeue] += std::max(0.0, to - hold_end);
}

// The attempt's own span [start, end].
void AddAttempt(TimeBuckets* b, const BucketAttempt& a, double start, double end, bool open) {
  const std::optional<double> first =
      Min(Min(a.first_step_start, a.first_save_start), a.first_eval_start);
  const std::optional<double> last = Max(Max(a.last_step_end, a.last_save_end), a.last_eval_end);
  double tail_from = start;
  if (first && last) {
    const double f = Clamp(*first, start, end);
    const double l = Clamp(*last, f, end);
    (*b)[TimeBucket::kStartup] += f - start;
    // Steps first, then saves, then evals, each only for the room left: times that overlap (records
    // that contradict each other; one trainer never writes them) are not counted twice.
    double room = l - f;
    for (const auto& [bucket, seconds] : {std::pair{TimeBucket::kProductive, a.productive_s},
                                          std::pair{TimeBucket::kRolledBack, a.rolled_back_s},
                                          std::pair{TimeBucket::kSkipped, a.skipped_s},
                                          std::pair{TimeBucket::kCheckpointStall, a.save_s},
                                          std::pair{TimeBucket::kEval, a.eval_s}}) {
      const double take = std::min(seconds, room);
      (*b)[bucket] += take;
      room -= take;
    }
    (*b)[TimeBucket::kOther] += room;
    tail_from = l;
  }
  const double tail = end - tail_from;
  if (a.hang_detected_at) {
    const double verdict = Clamp(*a.hang_detected_at, tail_from, end);
    const double beat = Clamp(a.hang_last_heartbeat_at.value_or(tail_from), tail_from, verdict);
    (*b)[TimeBucket::kOther] += beat - tail_from;
    (*b)[TimeBucket::kHangDetection] += verdict - beat;
    (*b)[TimeBucket::kStop] += end - verdict;
  } else if (!first) {
    // Never reached a step or a save: all of it was starting up (or failing to).
    (*b)[TimeBucket::kStartup] += tail;
  } else if (!open && StoppedBySignal(a)) {
    (*b)[TimeBucket::kStop] += tail;
  } else {
    (*b)[TimeBucket::kOther] += tail;
  }
  b->productive_steps += a.productive_steps;
  b->saves += a.saves;
  b->save_s += a.save_s;
}

void AddInto(TimeBuckets* to, const TimeBuckets& from) {
  for (size_t i = 0; i < kTimeBucketCount; ++i) to->s[i] += from.s[i];
  to->productive_steps += from.productive_steps;
  to->saves += from.saves;
  to->save_s += from.save_s;
}

}  // namespace

const std::array<TimeBucket, kTimeBucketCount>& AllTimeBuckets() { return kAll; }

double TimeBuckets::Sum() const {
  double sum = 0;
  for (double v : s) sum += v;
  return sum;
}

void AddStepRow(BucketAttempt* a, const StepRecord& s) {
  const double dt = Finite(s.step_time_s) ? std::max(0.0, s.step_time_s) : 0.0;
  if (s.superseded) {
    a->rolled_back_s += dt;
  } else if (s.nonfinite) {
    a->skipped_s += dt;
  } else {
    a->productive_s += dt;
    ++a->productive_steps;
  }
  a->first_step_start = Min(a->first_step_start, s.time - dt);
  a->last_step_end = Max(a->last_step_end, s.time);
}

void AddSave(BucketAttempt* a, const CheckpointRecord& c) {
  const double dt = Finite(c.seconds) ? std::max(0.0, c.seconds) : 0.0;
  a->save_s += dt;
  ++a->saves;
  a->first_save_start = Min(a->first_save_start, c.time - dt);
  a->last_save_end = Max(a->last_save_end, c.time);
}

BucketAttempt BucketAttemptFrom(const AttemptRecord& r) {
  BucketAttempt a;
  a.attempt_id = r.id;
  a.job_id = r.job_id;
  a.started_at = r.started_at;
  a.ended_at = r.ended_at;
  a.action = r.action;
  a.end_reason = r.end_reason;
  a.trainer_end_reason = r.trainer_end_reason;
  a.hold_released_at = r.hold_released_at;
  a.in_job_seq = r.in_job_seq;
  a.hang_last_heartbeat_at = r.hang_last_heartbeat_at;
  a.hang_detected_at = r.hang_detected_at;
  a.eval_s = r.eval_s;
  a.first_eval_start = r.first_eval_start;
  a.last_eval_end = r.last_eval_end;
  return a;
}

RunTimeBuckets ComputeTimeBuckets(const BucketInput& in) {
  RunTimeBuckets out;
  double cursor = in.submitted_at;  // where the timeline has been cut to
  const BucketAttempt* prev = nullptr;
  const size_t n = in.attempts.size();
  for (size_t i = 0; i < n; ++i) {
    const BucketAttempt& a = in.attempts[i];
    AttemptTimeBuckets at;
    at.attempt_id = a.attempt_id;
    at.interrupted = Interrupted(a);
    const double from = cursor;
    // An attempt with no start record (only an end, or nothing yet) begins where the last ended.
    const double start = std::max(cursor, a.started_at.value_or(cursor));
    AddGap(&at.buckets, prev, &a, cursor, start);
    const bool last = i + 1 == n;
    const bool open = !a.ended_at && last && !in.run_terminal;
    double end = start;
    if (a.ended_at) {
      end = std::max(start, *a.ended_at);
    } else if (open) {
      end = std::max(start, in.now);
    } else {
      // Never closed (reconcile has not caught up): it lasted until its last step, save or eval, or
      // the next attempt's start.
      end = std::max(start,
                     Max(Max(a.last_step_end, a.last_save_end), a.last_eval_end).value_or(start));
      if (!last && in.attempts[i + 1].started_at)
        end = std::min(end, *in.attempts[i + 1].started_at);
      end = std::max(start, end);
    }
    AddAttempt(&at.buckets, a, start, end, open);
    at.buckets.wall_s = end - from;
    out.running_s += end - start;
    if (at.interrupted) ++out.interruptions;
    AddInto(&out.run, at.buckets);
    out.attempts.push_back(at);
    cursor = end;
    prev = &a;
  }
  double wall_end = cursor;
  if (!in.run_terminal && (n == 0 || in.attempts.back().ended_at)) {
    // Waiting for the next start: queued, or held after a requeue.
    wall_end = std::max(cursor, in.now);
    AddGap(&out.run, prev, nullptr, cursor, wall_end);
  }
  out.run.wall_s = wall_end - in.submitted_at;
  out.as_of = in.run_terminal ? wall_end : in.now;
  return out;
}

std::optional<double> Ettr(const TimeBuckets& b) {
  if (!(b.wall_s > 0)) return std::nullopt;
  return b[TimeBucket::kProductive] / b.wall_s;
}

std::optional<double> EttrWithoutQueue(const TimeBuckets& b) {
  const double w = b.wall_s - b[TimeBucket::kQueue] - b[TimeBucket::kQueueAfterRequeue];
  if (!(w > 0)) return std::nullopt;
  return b[TimeBucket::kProductive] / w;
}

CheckpointIntervalAdvice AdviseCheckpointInterval(const RunTimeBuckets& r) {
  CheckpointIntervalAdvice a;
  a.interruptions = r.interruptions;
  if (r.run.saves > 0) a.mean_save_s = r.run.save_s / double(r.run.saves);
  if (r.interruptions == 0) {
    a.reason = "not enough interruptions";
    return a;
  }
  a.mean_time_between_interruptions_s = r.running_s / double(r.interruptions);
  if (r.run.saves == 0 || !(a.mean_save_s > 0)) {
    a.reason = "no checkpoint saves measured";
    return a;
  }
  a.seconds = std::sqrt(2.0 * a.mean_save_s * *a.mean_time_between_interruptions_s);
  if (r.run.productive_steps > 0 && r.run[TimeBucket::kProductive] > 0) {
    a.steps = *a.seconds / (r.run[TimeBucket::kProductive] / double(r.run.productive_steps));
  }
  return a;
}

}  // namespace baton
