// Where a run's time went (run_time_buckets.h): hand-built records with known answers — two
// preemptions with a released and an assumed hold, a crash whose steps are rolled back, a
// skipped step, a hang with an in-job restart, a live run waiting, inline evals — and the store's
// path (time_bucket_store.h: per-attempt statistics, not rows) against the rows themselves.
#include "orchestrator/store/run_time_buckets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "orchestrator/store/time_bucket_store.h"
#include "test_util.h"

namespace baton {
namespace {

constexpr double kEps = 1e-9;

// Steps [first, last] of `a`, step k ending at t0 + (k - first) + 1 with 1 s each.
void Steps(BucketAttempt* a, int64_t first, int64_t last, double t0, int64_t superseded_from = -1,
           int64_t nonfinite = -1) {
  for (int64_t k = first; k <= last; ++k) {
    StepRecord s;
    s.step = k;
    s.time = t0 + double(k - first) + 1;
    s.step_time_s = 1.0;
    s.superseded = superseded_from >= 0 && k >= superseded_from;
    s.nonfinite = k == nonfinite;
    AddStepRow(a, s);
  }
}

void Save(BucketAttempt* a, double end, double seconds) {
  CheckpointRecord c;
  c.time = end;
  c.seconds = seconds;
  AddSave(a, c);
}

BucketAttempt Attempt(int64_t id, double start, std::optional<double> end, const char* action,
                      const char* reason, const char* trainer) {
  BucketAttempt a;
  a.attempt_id = id;
  a.started_at = start;
  a.ended_at = end;
  a.action = action;
  a.end_reason = reason;
  a.trainer_end_reason = trainer;
  return a;
}

double B(const TimeBuckets& b, TimeBucket k) { return b[k]; }

// Preempted (hold released after 3 s), then crashed (hold not released: the assumed 121 s),
// then completed after resuming 5 steps before the crash.
BucketInput ThreeAttempts() {
  BucketInput in;
  in.submitted_at = 1000;
  in.run_terminal = true;
  BucketAttempt a = Attempt(1, 1010, 1032, "requeue", "preempted", "signal");
  Steps(&a, 0, 9, 1015);      // 1015 → 1025
  Save(&a, 1025.5, 0.5);      // periodic at 10
  Steps(&a, 10, 14, 1025.5);  // → 1030.5
  Save(&a, 1031, 0.5);        // on the signal
  a.hold_released_at = 1035;
  BucketAttempt b = Attempt(2, 1045, 1062, "requeue", "crashed", "");
  Steps(&b, 15, 19, 1049);                            // → 1054
  Save(&b, 1054.5, 0.5);                              // periodic at 20
  Steps(&b, 20, 24, 1054.5, /*superseded_from=*/20);  // → 1059.5, redone by the next attempt
  BucketAttempt c = Attempt(3, 1192, 1211, "done", "completed", "completed");
  Steps(&c, 20, 29, 1199, -1, /*nonfinite=*/25);  // → 1209
  Save(&c, 1210, 1.0);                            // final
  in.attempts = {a, b, c};
  return in;
}

TEST(TimeBuckets, TwoPreemptionsACrashAndARollback) {
  const RunTimeBuckets r = ComputeTimeBuckets(ThreeAttempts());
  ASSERT_EQ(r.attempts.size(), 3u);
  const TimeBuckets& a = r.attempts[0].buckets;
  EXPECT_NEAR(a.wall_s, 32, kEps);
  EXPECT_NEAR(B(a, TimeBucket::kQueue), 10, kEps);
  EXPECT_NEAR(B(a, TimeBucket::kStartup), 5, kEps);
  EXPECT_NEAR(B(a, TimeBucket::kProductive), 15, kEps);
  EXPECT_NEAR(B(a, TimeBucket::kCheckpointStall), 1, kEps);
  EXPECT_NEAR(B(a, TimeBucket::kOther), 0, kEps);
  EXPECT_NEAR(B(a, TimeBucket::kStop), 1, kEps);

  const TimeBuckets& b = r.attempts[1].buckets;
  EXPECT_NEAR(b.wall_s, 30, kEps);
  EXPECT_NEAR(B(b, TimeBucket::kRequeueHold), 3, kEps);  // end → hold_released_at
  EXPECT_NEAR(B(b, TimeBucket::kQueueAfterRequeue), 10, kEps);
  EXPECT_NEAR(B(b, TimeBucket::kStartup), 4, kEps);
  EXPECT_NEAR(B(b, TimeBucket::kProductive), 5, kEps);
  EXPECT_NEAR(B(b, TimeBucket::kRolledBack), 5, kEps);
  EXPECT_NEAR(B(b, TimeBucket::kCheckpointStall), 0.5, kEps);
  EXPECT_NEAR(B(b, TimeBucket::kOther), 2.5, kEps);  // a crash's tail is not a stop
  EXPECT_NEAR(B(b, TimeBucket::kStop), 0, kEps);

  const TimeBuckets& c = r.attempts[2].buckets;
  EXPECT_NEAR(c.wall_s, 149, kEps);
  EXPECT_NEAR(B(c, TimeBucket::kRequeueHold), kAssumedRequeueHoldS, kEps);
  EXPECT_NEAR(B(c, TimeBucket::kQueueAfterRequeue), 9, kEps);
  EXPECT_NEAR(B(c, TimeBucket::kStartup), 7, kEps);
  EXPECT_NEAR(B(c, TimeBucket::kProductive), 9, kEps);
  EXPECT_NEAR(B(c, TimeBucket::kSkipped), 1, kEps);
  EXPECT_NEAR(B(c, TimeBucket::kOther), 1, kEps);
  EXPECT_EQ(c.productive_steps, 9);

  const TimeBuckets& run = r.run;
  EXPECT_NEAR(run.wall_s, 211, kEps);
  EXPECT_NEAR(run.Sum(), run.wall_s, kEps);
  for (const AttemptTimeBuckets& at : r.attempts)
    EXPECT_NEAR(at.buckets.Sum(), at.buckets.wall_s, kEps);
  EXPECT_NEAR(B(run, TimeBucket::kProductive), 29, kEps);
  EXPECT_EQ(run.productive_steps, 29);
  EXPECT_NEAR(*Ettr(run), 29.0 / 211.0, kEps);
  EXPECT_NEAR(*EttrWithoutQueue(run), 29.0 / (211.0 - 10 - 19), kEps);

  EXPECT_EQ(r.interruptions, 2);
  EXPECT_NEAR(r.running_s, 22 + 17 + 19, kEps);
  const CheckpointIntervalAdvice adv = AdviseCheckpointInterval(r);
  ASSERT_TRUE(adv.seconds);
  EXPECT_NEAR(adv.mean_save_s, 2.5 / 4, kEps);
  EXPECT_NEAR(*adv.mean_time_between_interruptions_s, 29, kEps);
  EXPECT_NEAR(*adv.seconds, std::sqrt(2 * 0.625 * 29), kEps);
  EXPECT_NEAR(*adv.steps, std::sqrt(2 * 0.625 * 29), kEps);  // 1 s per productive step
}

TEST(TimeBuckets, AHangThenARestartInsideTheJob) {
  BucketInput in;
  in.submitted_at = 0;
  in.run_terminal = true;
  BucketAttempt a = Attempt(1, 10, 50, "requeue", "crashed", "");
  Steps(&a, 0, 4, 11);  // → 16
  a.hang_last_heartbeat_at = 17;
  a.hang_detected_at = 47;
  BucketAttempt d = Attempt(2, 53, 61, "done", "completed", "completed");
  d.in_job_seq = 1;
  Steps(&d, 5, 9, 55);  // → 60
  in.attempts = {a, d};
  const RunTimeBuckets r = ComputeTimeBuckets(in);
  const TimeBuckets& x = r.attempts[0].buckets;
  EXPECT_NEAR(B(x, TimeBucket::kOther), 1, kEps);  // last step → last heartbeat
  EXPECT_NEAR(B(x, TimeBucket::kHangDetection), 30, kEps);
  EXPECT_NEAR(B(x, TimeBucket::kStop), 3, kEps);  // verdict → exit
  const TimeBuckets& y = r.attempts[1].buckets;
  EXPECT_NEAR(B(y, TimeBucket::kRestart), 3, kEps);
  EXPECT_NEAR(B(y, TimeBucket::kRequeueHold), 0, kEps);
  EXPECT_NEAR(B(y, TimeBucket::kStartup), 2, kEps);
  EXPECT_NEAR(r.run.wall_s, 61, kEps);
  EXPECT_NEAR(r.run.Sum(), 61, kEps);
  EXPECT_EQ(r.interruptions, 1);
}

// A stop that was no requeue (a failed run resumed as a new job) waits like a submit; an
// attempt reconcile closed (no launcher action) followed by the same job's next start was
// requeued by SLURM: its gap is a hold.
TEST(TimeBuckets, WhatTheGapBeforeAnAttemptIs) {
  BucketInput in;
  in.submitted_at = 0;
  in.run_terminal = true;
  BucketAttempt a = Attempt(1, 10, 20, "fail", "crashed", "");
  a.job_id = "5";
  BucketAttempt b = Attempt(2, 100, 110, "", "preempted", "");
  b.job_id = "6";
  BucketAttempt c = Attempt(3, 300, 310, "done", "completed", "completed");
  c.job_id = "6";
  in.attempts = {a, b, c};
  const RunTimeBuckets r = ComputeTimeBuckets(in);
  EXPECT_NEAR(B(r.attempts[1].buckets, TimeBucket::kQueue), 80, kEps);
  EXPECT_NEAR(B(r.attempts[1].buckets, TimeBucket::kRequeueHold), 0, kEps);
  EXPECT_NEAR(B(r.attempts[2].buckets, TimeBucket::kRequeueHold), kAssumedRequeueHoldS, kEps);
  EXPECT_NEAR(B(r.attempts[2].buckets, TimeBucket::kQueueAfterRequeue), 190 - kAssumedRequeueHoldS,
              kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kStartup), 30, kEps);  // no step at all: all startup
  EXPECT_NEAR(r.run.Sum(), 310, kEps);
}

TEST(TimeBuckets, ALiveRunWaitingOrRunningEndsAtNow) {
  BucketInput in;
  in.submitted_at = 0;
  in.now = 200;
  BucketAttempt a = Attempt(1, 5, 10, "requeue", "preempted", "signal");
  Steps(&a, 0, 1, 6);  // → 8
  in.attempts = {a};
  RunTimeBuckets r = ComputeTimeBuckets(in);
  EXPECT_NEAR(r.run.wall_s, 200, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kStop), 2, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kRequeueHold), kAssumedRequeueHoldS, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kQueueAfterRequeue), 200 - 10 - kAssumedRequeueHoldS, kEps);
  EXPECT_NEAR(r.run.Sum(), 200, kEps);
  EXPECT_NEAR(r.attempts[0].buckets.wall_s, 10, kEps);
  EXPECT_EQ(AdviseCheckpointInterval(r).reason, "no checkpoint saves measured");

  in.attempts[0].ended_at.reset();  // still running: its tail is the step in flight
  in.now = 20;
  r = ComputeTimeBuckets(in);
  EXPECT_NEAR(B(r.run, TimeBucket::kOther), 12, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kStop), 0, kEps);
  EXPECT_NEAR(r.run.Sum(), 20, kEps);
  EXPECT_FALSE(AdviseCheckpointInterval(r).seconds);
  EXPECT_EQ(AdviseCheckpointInterval(r).reason, "not enough interruptions");
}

// A save whose reported seconds overlap the steps around it (records that contradict each
// other) counts only for the room the steps leave: the buckets still add up, the steps intact.
TEST(TimeBuckets, OverlappingRecordsAreNotCountedTwice) {
  BucketInput in;
  in.submitted_at = 0;
  in.run_terminal = true;
  BucketAttempt a = Attempt(1, 0, 12, "done", "completed", "completed");
  Steps(&a, 0, 4, 1);    // 1 → 6 (startup 1)
  Save(&a, 6.5, 4.5);    // claims 2 → 6.5
  Steps(&a, 5, 9, 6.5);  // → 11.5
  in.attempts = {a};
  const RunTimeBuckets r = ComputeTimeBuckets(in);
  EXPECT_NEAR(B(r.run, TimeBucket::kProductive), 10, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kCheckpointStall), 0.5, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kStartup), 1, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kOther), 0.5, kEps);  // the tail of a completed attempt
  EXPECT_NEAR(r.run.Sum(), r.run.wall_s, kEps);
  EXPECT_NEAR(r.run.wall_s, 12, kEps);
}

// Inline evals between steps and one after the last step are the `eval` bucket, not `other`
// and not `stop`: the attempt's span runs to the last eval's end.
TEST(TimeBuckets, InlineEvalsAreTheirOwnBucket) {
  BucketInput in;
  in.submitted_at = 0;
  in.run_terminal = true;
  BucketAttempt a = Attempt(1, 2, 20, "requeue", "preempted", "signal");
  Steps(&a, 0, 4, 3);  // 3 → 8 (startup 1)
  Save(&a, 8.5, 0.5);
  a.eval_s = 2;           // 8.5 → 10.5
  Steps(&a, 5, 9, 10.5);  // → 15.5
  a.eval_s += 3;          // 15.5 → 18.5, after the last step
  a.first_eval_start = 8.5;
  a.last_eval_end = 18.5;
  in.attempts = {a};
  const RunTimeBuckets r = ComputeTimeBuckets(in);
  EXPECT_NEAR(B(r.run, TimeBucket::kQueue), 2, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kStartup), 1, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kProductive), 10, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kCheckpointStall), 0.5, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kEval), 5, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kOther), 0, kEps);
  EXPECT_NEAR(B(r.run, TimeBucket::kStop), 1.5, kEps);  // last eval's end → attempt_end
  EXPECT_NEAR(r.run.Sum(), 20, kEps);
  EXPECT_EQ(std::string(Name(TimeBucket::kEval)), "eval");

  // Without its eval records the same attempt puts that time into other and stop.
  in.attempts[0].eval_s = 0;
  in.attempts[0].first_eval_start.reset();
  in.attempts[0].last_eval_end.reset();
  const RunTimeBuckets without = ComputeTimeBuckets(in);
  EXPECT_NEAR(B(without.run, TimeBucket::kEval), 0, kEps);
  EXPECT_NEAR(B(without.run, TimeBucket::kOther), 2, kEps);
  EXPECT_NEAR(B(without.run, TimeBucket::kStop), 4.5, kEps);
  EXPECT_NEAR(without.run.Sum(), 20, kEps);
}

// The store's answer (per-attempt statistics, first/last rows, saves) equals the pure function
// over the very rows and checkpoints it holds, and survives a write and a read back.
TEST(TimeBuckets, TheStoreAgreesWithItsRows) {
  test::TempDir tmp;
  auto store = test::OpenStore(tmp / "baton.db");
  ASSERT_TRUE(store);
  const RunRecord run0 = test::MakeRun(*store, "/runs/t", "t", 30);
  const BucketInput hand = ThreeAttempts();
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    BATON_RETURN_IF_ERROR(
                        store->SetRunStatusInTx(run0.id, RunStatus::kCompleted, "", 1211));
                    for (size_t i = 0; i < 3; ++i) {
                      BATON_ASSIGN_OR_RETURN(const int64_t id,
                                             store->EnsureAttemptInTx(run0.id, "7", int64_t(i)));
                      BATON_ASSIGN_OR_RETURN(AttemptRecord a, store->GetAttempt(id));
                      const BucketAttempt& h = hand.attempts[i];
                      a.started_at = h.started_at;
                      a.ended_at = h.ended_at;
                      a.action = h.action;
                      a.end_reason = h.end_reason;
                      a.trainer_end_reason = h.trainer_end_reason;
                      a.hold_released_at = h.hold_released_at;
                      BATON_RETURN_IF_ERROR(store->UpdateAttemptInTx(a));
                    }
                    return Status::Ok();
                  })
                  .ok());
  const std::vector<AttemptRecord> attempts = store->ListAttempts(run0.id).value();
  // The same rows as ThreeAttempts, through InsertStepInTx (which marks the redone ones).
  auto steps = [&](size_t attempt, int64_t first, int64_t last, double t0, int64_t nonfinite) {
    return [=, &store, &attempts]() -> Status {
      for (int64_t k = first; k <= last; ++k) {
        StepRecord s;
        s.run_id = run0.id;
        s.attempt_id = attempts[attempt].id;
        s.step = k;
        s.time = t0 + double(k - first) + 1;
        s.step_time_s = 1.0;
        s.nonfinite = k == nonfinite;
        BATON_RETURN_IF_ERROR(store->InsertStepInTx(s));
      }
      return Status::Ok();
    };
  };
  auto save = [&](size_t attempt, int64_t step, double end, double seconds) {
    return [=, &store, &attempts]() -> Status {
      CheckpointRecord c;
      c.run_id = run0.id;
      c.attempt_id = attempts[attempt].id;
      c.step = step;
      c.time = end;
      c.seconds = seconds;
      return store->UpsertCheckpointInTx(c);
    };
  };
  for (const std::function<Status()>& write : std::vector<std::function<Status()>>{
           steps(0, 0, 9, 1015, -1), save(0, 10, 1025.5, 0.5), steps(0, 10, 14, 1025.5, -1),
           save(0, 15, 1031, 0.5), steps(1, 15, 19, 1049, -1), save(1, 20, 1054.5, 0.5),
           steps(1, 20, 24, 1054.5, -1), steps(2, 20, 29, 1199, 25), save(2, 30, 1210, 1.0)}) {
    ASSERT_TRUE(store->Write(write).ok());
  }
  const RunRecord run = store->GetRun(run0.id).value();
  EXPECT_FALSE(ReadTimeBuckets(*store, run.id).value().has_value());
  ASSERT_TRUE(RefreshTimeBuckets(*store, run, /*now=*/5000).ok());
  const std::optional<RunTimeBuckets> stored = ReadTimeBuckets(*store, run.id).value();
  ASSERT_TRUE(stored);

  // The rows themselves, built as the unit tests build them.
  BucketInput rows;
  rows.submitted_at = run.created_at;
  rows.run_terminal = true;
  const std::vector<StepRecord> all =
      store->ListSteps(run.id, StepQuery{0, INT64_MAX, /*include_superseded=*/true}).value();
  const std::vector<CheckpointRecord> saves = store->ListCheckpoints(run.id).value();
  double effective_applied_s = 0;
  for (const AttemptRecord& a : attempts) {
    BucketAttempt b = BucketAttemptFrom(store->GetAttempt(a.id).value());
    for (const StepRecord& s : all) {
      if (s.attempt_id == a.id) AddStepRow(&b, s);
      if (s.attempt_id == a.id && !s.superseded && !s.nonfinite)
        effective_applied_s += s.step_time_s;
    }
    for (const CheckpointRecord& c : saves) {
      if (c.attempt_id == a.id) AddSave(&b, c);
    }
    rows.attempts.push_back(b);
  }
  const RunTimeBuckets expect = ComputeTimeBuckets(rows);
  EXPECT_NEAR(stored->run.wall_s, expect.run.wall_s, kEps);
  for (TimeBucket k : AllTimeBuckets()) {
    EXPECT_NEAR(stored->run[k], expect.run[k], 1e-6) << Name(k);
  }
  EXPECT_NEAR(stored->run[TimeBucket::kProductive], effective_applied_s, 1e-6);
  EXPECT_NEAR(stored->run[TimeBucket::kRolledBack], 5, 1e-6);  // marked by the store itself
  ASSERT_EQ(stored->attempts.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(stored->attempts[i].attempt_id, attempts[i].id);
    EXPECT_NEAR(stored->attempts[i].buckets.wall_s, expect.attempts[i].buckets.wall_s, 1e-6);
    for (TimeBucket k : AllTimeBuckets()) {
      EXPECT_NEAR(stored->attempts[i].buckets[k], expect.attempts[i].buckets[k], 1e-6)
          << "attempt " << i << " " << Name(k);
    }
  }
  EXPECT_EQ(stored->interruptions, 2);
  EXPECT_NEAR(stored->running_s, expect.running_s, 1e-6);
  EXPECT_EQ(stored->run.productive_steps, 29);
}

}  // namespace
}  // namespace baton
