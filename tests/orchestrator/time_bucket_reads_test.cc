// Time buckets read without the write lock: a run's buckets are computed while another process
// holds the write lock (no write transaction is taken for the read, and the read refuses to run
// inside one), per attempt right for a run of many attempts (each attempt's steps and save
// matched to it, not to a neighbour), the same as what a refresh stores; and the inputs' stamp,
// which decides whether a refresh must read again under the lock, follows every input.
#include <gtest/gtest.h>

#include <chrono>

#include "orchestrator/store/store_spec.h"
#include "orchestrator/store/time_bucket_store.h"
#include "test_util.h"

namespace baton {
namespace {

constexpr int kAttempts = 300;

// Attempt i (1-based job restarts) ran 2 steps of (i + 1) / 1000 s each and saved once.
RunRecord ManyAttempts(Store& store, const std::string& run_dir) {
  const RunRecord run = test::MakeRun(store, run_dir, "many", 1000);
  EXPECT_TRUE(store
                  .Write([&]() -> Status {
                    for (int i = 0; i < kAttempts; ++i) {
                      BATON_ASSIGN_OR_RETURN(const int64_t id,
                                             store.EnsureAttemptInTx(run.id, "7", i));
                      BATON_ASSIGN_OR_RETURN(AttemptRecord a, store.GetAttempt(id));
                      a.started_at = 1000.0 + 10 * i;
                      a.ended_at = 1000.0 + 10 * i + 5;
                      a.action = "requeue";
                      a.end_reason = "preempted";
                      BATON_RETURN_IF_ERROR(store.UpdateAttemptInTx(a));
                      for (int k = 0; k < 2; ++k) {
                        StepRecord s;
                        s.run_id = run.id;
                        s.attempt_id = id;
                        s.step = 2 * i + k;
                        s.time = a.started_at.value() + 1 + k;
                        s.step_time_s = (i + 1) / 1000.0;
                        BATON_RETURN_IF_ERROR(store.InsertStepInTx(s));
                      }
                      CheckpointRecord c;
                      c.run_id = run.id;
                      c.attempt_id = id;
                      c.step = 2 * i + 2;
                      c.time = a.started_at.value() + 3;
                      c.seconds = 0.25;
                      BATON_RETURN_IF_ERROR(store.UpsertCheckpointInTx(c));
                    }
                    return Status::Ok();
                  })
                  .ok());
  return store.GetRun(run.id).value();
}

TEST(TimeBucketReads, ComputeWhileAnotherProcessHoldsTheWriteLock) {
  test::TempDir tmp;
  const std::string path = tmp / "baton.db";
  auto store = test::OpenStore(path);
  ASSERT_TRUE(store);
  const RunRecord run = ManyAttempts(*store, tmp / "run");

  // Another connection takes the write lock and keeps it.
  auto other = OpenDb(ParseStoreSpec(test::TestStore(path)).value(), kBusyTimeoutMs);
  ASSERT_TRUE(other.ok());
  Result<Transaction> held = Transaction::Begin(**other);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  std::vector<std::string> stamp;
  const auto t0 = std::chrono::steady_clock::now();
  Result<RunTimeBuckets> computed = ComputeTimeBucketsUnlocked(*store, run, /*now=*/9000, &stamp);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(computed.ok()) << computed.status().ToString();
  EXPECT_LT(s, 2.0) << "the read waited for the write lock";
  EXPECT_FALSE(stamp.empty());

  // Each attempt's own steps and save.
  ASSERT_EQ(computed->attempts.size(), size_t(kAttempts));
  const std::vector<AttemptRecord> attempts = store->ListAttempts(run.id).value();
  for (int i = 0; i < kAttempts; ++i) {
    const AttemptTimeBuckets& a = computed->attempts[size_t(i)];
    EXPECT_EQ(a.attempt_id, attempts[size_t(i)].id);
    EXPECT_NEAR(a.buckets[TimeBucket::kProductive], 2 * (i + 1) / 1000.0, 1e-9) << i;
    EXPECT_EQ(a.buckets.productive_steps, 2) << i;
    EXPECT_EQ(a.buckets.saves, 1) << i;
  }
  held->Rollback();

  // A refresh stores the same figures.
  ASSERT_TRUE(RefreshTimeBuckets(*store, run, /*now=*/9000).ok());
  const RunTimeBuckets stored = ReadTimeBuckets(*store, run.id).value().value();
  EXPECT_NEAR(stored.run.wall_s, computed->run.wall_s, 1e-9);
  for (TimeBucket k : AllTimeBuckets()) {
    EXPECT_NEAR(stored.run[k], computed->run[k], 1e-6) << Name(k);
  }
  EXPECT_EQ(stored.interruptions, computed->interruptions);
}

TEST(TimeBucketReads, TheReadRefusesToRunInsideATransaction) {
  test::TempDir tmp;
  auto store = test::OpenStore(tmp / "baton.db");
  const RunRecord run = test::MakeRun(*store, tmp / "run");
  std::vector<std::string> stamp;
  const Status st = store->Write(
      [&]() -> Status { return ComputeTimeBucketsUnlocked(*store, run, 9000, &stamp).status(); });
  EXPECT_EQ(st.code(), Code::kInternal) << st.ToString();
}

TEST(TimeBucketReads, TheStampFollowsEveryInput) {
  test::TempDir tmp;
  auto store = test::OpenStore(tmp / "baton.db");
  const RunRecord run = ManyAttempts(*store, tmp / "run");
  auto stamp = [&] { return TimeBucketInputStamp(*store, run.id).value(); };
  std::vector<std::string> last = stamp();
  EXPECT_EQ(stamp(), last);  // nothing changed
  auto changes = [&](const char* what, const std::function<Status()>& write) {
    ASSERT_TRUE(store->Write(write).ok()) << what;
    const std::vector<std::string> now = stamp();
    EXPECT_NE(now, last) << what;
    last = now;
  };
  changes("a cursor moved (rows ingested)",
          [&] { return store->SetCursorInTx("/e/7.0.jsonl", run.id, 100, 0, 5.0); });
  changes("an attempt ended later", [&]() -> Status {
    BATON_ASSIGN_OR_RETURN(AttemptRecord a,
                           store->GetAttempt(store->ListAttempts(run.id)->back().id));
    a.ended_at = *a.ended_at + 1;
    return store->UpdateAttemptInTx(a);
  });
  changes("a hold released", [&]() -> Status {
    BATON_ASSIGN_OR_RETURN(AttemptRecord a,
                           store->GetAttempt(store->ListAttempts(run.id)->front().id));
    a.hold_released_at = 1009.0;
    return store->UpdateAttemptInTx(a);
  });
  changes("a save", [&]() -> Status {
    CheckpointRecord c;
    c.run_id = run.id;
    c.step = 5000;
    c.time = 9000;
    c.seconds = 1;
    return store->UpsertCheckpointInTx(c);
  });
  changes("the run's status",
          [&] { return store->SetRunStatusInTx(run.id, RunStatus::kCompleted, "", 9001); });
}

}  // namespace
}  // namespace baton
