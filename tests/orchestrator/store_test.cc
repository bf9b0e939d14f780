// Store: migrations, transactions that roll back, prepared statements, run lookup.
#include "orchestrator/store/store.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace baton {
namespace {

using testing::MakeRun;
using testing::OpenStore;
using testing::TempDir;

TEST(Store, MigratesAFreshDatabaseToTheLatestVersion) {
  TempDir tmp;
  auto store = OpenStore(tmp / "home/baton.db");  // creates the folder too
  ASSERT_TRUE(store);
  EXPECT_GE(Store::LatestSchemaVersion(), 1);
  EXPECT_EQ(store->SchemaVersion().value(), Store::LatestSchemaVersion());
}

TEST(Store, ReopeningKeepsDataAndVersion) {
  TempDir tmp;
  {
    auto store = OpenStore(tmp / "baton.db");
    MakeRun(*store, "/runs/a", "a");
  }
  auto store = OpenStore(tmp / "baton.db");
  EXPECT_EQ(store->SchemaVersion().value(), Store::LatestSchemaVersion());
  EXPECT_EQ(store->ListRuns().value().size(), 1u);
}

TEST(Store, RefusesADatabaseFromANewerBaton) {
  TempDir tmp;
  {
    auto store = OpenStore(tmp / "baton.db");
    ASSERT_TRUE(store->db().Exec("PRAGMA user_version = 999").ok());
  }
  Result<std::unique_ptr<Store>> s = Store::Open(tmp / "baton.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kData);
  EXPECT_NE(s.status().message().find("newer"), std::string::npos);
}

TEST(Store, RefusesAFileThatIsNotADatabase) {
  TempDir tmp;
  testing::Append(tmp / "baton.db", std::string(4096, 'x'));
  Result<std::unique_ptr<Store>> s = Store::Open(tmp / "baton.db");
  EXPECT_FALSE(s.ok());
}

TEST(Store, WriteRollsBackWhenTheBodyFails) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  Status st = store->Write([&]() -> Status {
    NewRun n;
    n.name = "doomed";
    n.config = "x";
    n.run_dir = "/runs/doomed";
    n.target_steps = 1;
    Result<int64_t> id = store->CreateRunInTx(n, 1.0);
    EXPECT_TRUE(id.ok());
    return Status::Io("disk full");
  });
  EXPECT_EQ(st.code(), Code::kIo);
  EXPECT_TRUE(store->ListRuns().value().empty());
  EXPECT_FALSE(store->db().InTransaction());
}

TEST(Store, TransactionRollsBackUnlessCommitted) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  {
    Result<Transaction> tx = store->Begin();
    ASSERT_TRUE(tx.ok());
    NewRun n;
    n.name = "abandoned";
    n.config = "x";
    n.run_dir = "/runs/x";
    ASSERT_TRUE(store->CreateRunInTx(n, 1.0).ok());
  }  // no Commit
  EXPECT_TRUE(store->ListRuns().value().empty());
  {
    Result<Transaction> tx = store->Begin();
    NewRun n;
    n.name = "kept";
    n.config = "x";
    n.run_dir = "/runs/y";
    ASSERT_TRUE(store->CreateRunInTx(n, 1.0).ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  EXPECT_EQ(store->ListRuns().value().size(), 1u);
}

TEST(Store, ASecondWriterWaitsThenReportsUnavailable) {
  TempDir tmp;
  auto a = OpenStore(tmp / "baton.db");
  auto b = OpenStore(tmp / "baton.db");
  sqlite3_busy_timeout(b->db().raw(), 50);  // do not wait the real 10 s
  Result<Transaction> held = a->Begin();
  ASSERT_TRUE(held.ok());
  Result<Transaction> second = b->Begin();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  // Readers are not blocked by the writer (WAL).
  EXPECT_TRUE(b->ListRuns().ok());
}

TEST(Store, ValuesAreBoundNeverSpliced) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const std::string evil = "x'); DROP TABLE runs; --";
  RunRecord r = MakeRun(*store, "/runs/evil", evil);
  EXPECT_EQ(store->GetRun(r.id).value().name, evil);
  EXPECT_EQ(store->FindRun(evil).value().id, r.id);
  EXPECT_EQ(store->ListRuns().value().size(), 1u);
}

TEST(Store, FindsRunsByIdOrNewestWithTheName) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord first = MakeRun(*store, "/runs/1", "exp");
  RunRecord second = MakeRun(*store, "/runs/2", "exp");
  EXPECT_EQ(store->FindRun(std::to_string(first.id)).value().id, first.id);
  EXPECT_EQ(store->FindRun("exp").value().id, second.id);
  Result<RunRecord> missing = store->FindRun("nope");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  EXPECT_EQ(store->FindRun("999").status().code(), Code::kNotFound);
}

TEST(Store, TerminalStatusIsNotOverwrittenByActiveUpdates) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord r = MakeRun(*store, "/runs/t");
  ASSERT_TRUE(
      store->Write([&] { return store->SetRunStatusInTx(r.id, RunStatus::kCancelled, "user", 2); })
          .ok());
  ASSERT_TRUE(
      store->Write([&] { return store->SetActiveRunStatusInTx(r.id, RunStatus::kRunning, "", 3); })
          .ok());
  EXPECT_EQ(store->GetRun(r.id).value().status, RunStatus::kCancelled);
  EXPECT_TRUE(store->ListActiveRuns().value().empty());
}

TEST(Store, StepsOfALaterAttemptSupersedeEarlierOnes) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord r = MakeRun(*store, "/runs/s");
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    const int64_t a1 = store->EnsureAttemptInTx(r.id, "7", 0).value();
                    const int64_t a2 = store->EnsureAttemptInTx(r.id, "7", 1).value();
                    for (int64_t s = 1; s <= 5; ++s) {
                      StepRecord x;
                      x.run_id = r.id;
                      x.attempt_id = a1;
                      x.step = s;
                      BATON_RETURN_IF_ERROR(store->InsertStepInTx(x));
                    }
                    for (int64_t s = 4; s <= 6; ++s) {  // resumed from the checkpoint at 3
                      StepRecord x;
                      x.run_id = r.id;
                      x.attempt_id = a2;
                      x.step = s;
                      BATON_RETURN_IF_ERROR(store->InsertStepInTx(x));
                    }
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(store->CountSteps(r.id, false).value(), 6);
  EXPECT_EQ(store->CountSteps(r.id, true).value(), 8);
  std::vector<StepRecord> effective = store->ListSteps(r.id).value();
  ASSERT_EQ(effective.size(), 6u);
  EXPECT_EQ(effective[3].step, 4);
  EXPECT_EQ(effective[3].attempt_id, effective[5].attempt_id);  // 4 comes from the later attempt
  std::vector<AttemptRecord> attempts = store->ListAttempts(r.id).value();
  EXPECT_EQ(attempts[0].last_step, 5);
  EXPECT_EQ(attempts[1].last_step, 6);
}

}  // namespace
}  // namespace baton
