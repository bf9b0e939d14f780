// Store: migrations (and a version 1 database upgraded in place), transactions that roll back,
// prepared statements, run lookup, non-finite steps.
#include "orchestrator/store/store.h"
#include "orchestrator/store/sql_dialect.h"
#include "orchestrator/store/sqlite_db.h"
#include "orchestrator/store/store_internal.h"
#include "orchestrator/store/store_spec.h"

#include <gtest/gtest.h>

#include <cmath>

#include "orchestrator/embedded/embedded_files.h"
#include "test_util.h"

namespace baton {
namespace {

using test::MakeRun;
using test::OpenStore;
using test::TempDir;

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
    Db& db = StoreInternal::Db(*store);
    ASSERT_TRUE(db.Exec(SetSchemaVersionSql(db.backend(), 999)).ok());
  }
  Result<std::unique_ptr<Store>> s = Store::Open(test::TestStore(tmp / "baton.db"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kData);
  EXPECT_NE(s.status().message().find("newer"), std::string::npos);
}

TEST(Store, RefusesAFileThatIsNotADatabase) {
  TempDir tmp;
  test::Append(tmp / "baton.db", std::string(4096, 'x'));
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
  EXPECT_FALSE(StoreInternal::Db(*store).InTransaction());
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
  ASSERT_TRUE(StoreInternal::Db(*b).SetBusyTimeout(50).ok());  // do not wait the real 10 s
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
  // Steps finished, like step0: the last step row's index + 1.
  EXPECT_EQ(attempts[0].last_step, 6);
  EXPECT_EQ(attempts[1].last_step, 7);
}

// The batched write ingest uses gives exactly the rows of one-by-one writes: more rows than one
// statement holds (256), gaps, a step written twice (the later wins), a resumed attempt that
// supersedes, rows of the earlier attempt that come in late (superseded at once), and rows an
// attempt wrote before written again (each of the batch's three ways to write, store_steps.cc).
TEST(Store, BatchedStepsMatchOneByOne) {
  TempDir tmp;
  std::vector<std::vector<StepRecord>> batches(3);
  auto row = [](int64_t attempt, int64_t step, double loss) {
    StepRecord x;
    x.attempt_id = attempt;  // 1 and 2: the ids the two attempts get below, set per store
    x.step = step;
    x.loss = loss;
    x.time = 1000 + double(step);
    x.tokens = step * 3;
    return x;
  };
  for (int64_t s = 0; s < 600; ++s) {
    if (s < 100 || s > 109) batches[0].push_back(row(1, s, 1.0 / double(s + 1)));
  }
  batches[0].push_back(row(1, 42, 9.5));  // written again: this one stays
  for (int64_t s = 300; s < 350; ++s) batches[1].push_back(row(2, s, 0.25));
  for (int64_t s = 340; s < 346; ++s) batches[2].push_back(row(1, s, 7.0));  // late rows
  batches.emplace_back();
  for (int64_t s = 320; s < 326; ++s) batches[3].push_back(row(2, s, 0.125));  // written again
  auto fill = [&](Store& store, bool batched) -> std::vector<StepRecord> {
    RunRecord r = MakeRun(store, tmp / (batched ? "b" : "o"));
    EXPECT_TRUE(store
                    .Write([&]() -> Status {
                      const int64_t ids[] = {store.EnsureAttemptInTx(r.id, "7", 0).value(),
                                             store.EnsureAttemptInTx(r.id, "7", 1).value()};
                      for (std::vector<StepRecord> batch : batches) {
                        for (StepRecord& x : batch) {
                          x.run_id = r.id;
                          x.attempt_id = ids[x.attempt_id - 1];
                          if (!batched) BATON_RETURN_IF_ERROR(store.InsertStepInTx(x));
                        }
                        if (batched) BATON_RETURN_IF_ERROR(store.InsertStepsInTx(batch));
                      }
                      return Status::Ok();
                    })
                    .ok());
    StepQuery q;
    q.include_superseded = true;
    std::vector<StepRecord> rows = store.ListSteps(r.id, q).value();
    for (const AttemptRecord& a : store.ListAttempts(r.id).value()) {
      StepRecord last;
      last.step = a.last_step.value_or(-1);
      last.loss = 0;
      rows.push_back(last);  // each attempt's last_step, compared with the rows
    }
    return rows;
  };
  auto one = OpenStore(tmp / "one.db");
  auto many = OpenStore(tmp / "many.db");
  const std::vector<StepRecord> want = fill(*one, false), got = fill(*many, true);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(want.size(), 590u + 50u + 2u);
  int superseded = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].step, want[i].step) << i;
    EXPECT_EQ(got[i].superseded, want[i].superseded) << "step " << want[i].step;
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "step " << want[i].step;
    EXPECT_DOUBLE_EQ(got[i].loss, want[i].loss) << "step " << want[i].step;
    superseded += want[i].superseded;
  }
  EXPECT_EQ(superseded, 50);            // 300..349 of attempt 1, the late rows among them
  EXPECT_EQ(want[590 + 50].step, 600);  // attempt 1 finished 600 steps
}

// The step rows' references hold on both backends (foreign keys on SQLite, per-statement checks
// on PostgreSQL): a batch naming an attempt that is not there is refused whole, and deleting a
// run deletes its attempts' step rows and nobody else's.
TEST(Store, StepRowsNeedTheirAttemptAndGoWithTheirRun) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord r1 = MakeRun(*store, tmp / "r1"), r2 = MakeRun(*store, tmp / "r2");
  auto rows = [](int64_t run, int64_t attempt, int64_t n) {
    std::vector<StepRecord> out;
    for (int64_t s = 0; s < n; ++s) {
      StepRecord x;
      x.run_id = run;
      x.attempt_id = attempt;
      x.step = s;
      out.push_back(x);
    }
    return out;
  };
  int64_t a1 = 0, a2 = 0;
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    a1 = store->EnsureAttemptInTx(r1.id, "7", 0).value();
                    a2 = store->EnsureAttemptInTx(r2.id, "8", 0).value();
                    BATON_RETURN_IF_ERROR(store->InsertStepsInTx(rows(r1.id, a1, 300)));
                    return store->InsertStepsInTx(rows(r2.id, a2, 40));
                  })
                  .ok());
  const Status dangling =
      store->Write([&]() -> Status { return store->InsertStepsInTx(rows(r1.id, a2 + 100, 300)); });
  EXPECT_FALSE(dangling.ok());
  EXPECT_EQ(store->CountSteps(r1.id, true).value(), 300);
  ASSERT_TRUE(
      StoreInternal::Db(*store).Exec("DELETE FROM runs WHERE id = " + std::to_string(r1.id)).ok());
  EXPECT_EQ(store->CountSteps(r1.id, true).value(), 0);
  EXPECT_EQ(store->CountSteps(r2.id, true).value(), 40);
}

// A database written by a baton that knew only schema version 1, with rows in every table
// that version 2 changes: opening it migrates in place and keeps every row.
TEST(Store, UpgradesAVersion1DatabaseInPlace) {
  TempDir tmp;
  const std::string path = tmp / "baton.db";
  {
    // On either backend (under BATON_TEST_STORE a PostgreSQL database), so every later
    // migration, the rebuilds of `attempts` included, runs over existing rows there too.
    auto db = OpenDb(ParseStoreSpec(test::TestStore(path)).value(), kBusyTimeoutMs);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    const Backend backend = (*db)->backend();
    const EmbeddedFile* v1 = nullptr;
    for (const EmbeddedFile& f : SqlMigrations()) {
      if (std::string(f.name).rfind("001_", 0) == 0) v1 = &f;
    }
    ASSERT_NE(v1, nullptr);
    ASSERT_TRUE((*db)->Exec(MigrationText(backend, v1->text)).ok());
    ASSERT_TRUE((*db)->Exec(SetSchemaVersionSql(backend, 1)).ok());
    ASSERT_TRUE((*db)
                    ->Exec("INSERT INTO runs (id, name, status, config, run_dir, target_steps, "
                           "max_restarts, max_failures, created_at, updated_at) VALUES "
                           "(1, 'old', 'FAILED', 'run: {}', '/runs/old', 10, 3, 3, 1, 1);"
                           "INSERT INTO attempts (id, run_id, job_id, restart_count, exit_code, "
                           "action, end_reason, trainer_end_reason) VALUES "
                           "(1, 1, '7', 0, 65, 'fail', 'data_error', 'error');"
                           "INSERT INTO steps (run_id, attempt_id, step, time, lr, loss) VALUES "
                           "(1, 1, 0, 5, 0.001, 2.5), (1, 1, 1, 6, 0.001, NULL);")
                    .ok());
  }
  auto store = OpenStore(path);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->SchemaVersion().value(), Store::LatestSchemaVersion());
  EXPECT_GE(Store::LatestSchemaVersion(), 2);
  EXPECT_EQ(store->GetRun(1).value().name, "old");
  const AttemptRecord a = store->GetAttempt(1).value();
  EXPECT_EQ(a.end_reason, "data_error");
  EXPECT_EQ(a.trainer_end_reason, "error");
  EXPECT_EQ(a.trainer_message, "");  // the new columns take their defaults
  EXPECT_FALSE(a.trainer_exit_code.has_value());
  const std::vector<StepRecord> steps = store->ListSteps(1).value();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_DOUBLE_EQ(steps[0].loss, 2.5);
  EXPECT_TRUE(std::isnan(steps[1].loss));
  EXPECT_FALSE(steps[0].nonfinite);
  EXPECT_TRUE(steps[0].nonfinite_episodes.empty());
  EXPECT_EQ(store->CountNonfiniteSteps(1).value().effective, 0);

  // The upgraded database takes the new fields.
  AttemptRecord updated = a;
  updated.trainer_message = "data/ep_3.safetensors: tensor latents holds 1 NaN/Inf value(s)";
  updated.trainer_exit_code = 65;
  ASSERT_TRUE(store->Write([&] { return store->UpdateAttemptInTx(updated); }).ok());
  EXPECT_EQ(store->GetAttempt(1).value().trainer_message, updated.trainer_message);
  EXPECT_EQ(store->GetAttempt(1).value().trainer_exit_code, 65);

  // Opening again changes nothing (no migration left to run).
  store.reset();
  store = OpenStore(path);
  EXPECT_EQ(store->SchemaVersion().value(), Store::LatestSchemaVersion());
  EXPECT_EQ(store->ListSteps(1).value().size(), 2u);
  // Rows copied with their ids by a rebuild never collide with new ones.
  EXPECT_EQ(MakeRun(*store, "/runs/new", "new").id, 2);
}

TEST(Store, NonfiniteStepsKeepTheirFlagAndEpisodes) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord r = MakeRun(*store, "/runs/nan");
  const std::vector<std::string> odd = {"ep_000003", "ep \"quoted\" <b>", "\xc3\xa9pisode",
                                        std::string("bad\xff utf8")};
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    const int64_t a1 = store->EnsureAttemptInTx(r.id, "7", 0).value();
                    const int64_t a2 = store->EnsureAttemptInTx(r.id, "7", 1).value();
                    for (int64_t s = 0; s < 6; ++s) {
                      StepRecord x;
                      x.run_id = r.id;
                      x.attempt_id = a1;
                      x.step = s;
                      x.loss = 1.0;
                      if (s == 2 || s == 4) {  // skipped; 4 is re-done by the second attempt
                        x.nonfinite = true;
                        x.loss = kNoValue;
                        x.nonfinite_episodes = s == 2 ? odd : std::vector<std::string>{"ep_9"};
                      }
                      BATON_RETURN_IF_ERROR(store->InsertStepInTx(x));
                    }
                    for (int64_t s = 4; s < 6; ++s) {
                      StepRecord x;
                      x.run_id = r.id;
                      x.attempt_id = a2;
                      x.step = s;
                      x.loss = 0.5;
                      BATON_RETURN_IF_ERROR(store->InsertStepInTx(x));
                    }
                    return Status::Ok();
                  })
                  .ok());
  const NonfiniteCounts counts = store->CountNonfiniteSteps(r.id).value();
  EXPECT_EQ(counts.effective, 1);
  EXPECT_EQ(counts.superseded, 1);
  std::vector<StepRecord> effective = store->ListNonfiniteSteps(r.id, false, 10).value();
  ASSERT_EQ(effective.size(), 1u);
  EXPECT_EQ(effective[0].step, 2);
  EXPECT_TRUE(effective[0].nonfinite);
  EXPECT_TRUE(std::isnan(effective[0].loss));  // stored as NULL, read back as "no value"
  ASSERT_EQ(effective[0].nonfinite_episodes.size(), 4u);
  EXPECT_EQ(effective[0].nonfinite_episodes[0], "ep_000003");
  EXPECT_EQ(effective[0].nonfinite_episodes[1], odd[1]);
  EXPECT_EQ(effective[0].nonfinite_episodes[2], odd[2]);
  // Invalid UTF-8 cannot be stored as JSON text: it is replaced, the rest of the id kept.
  EXPECT_EQ(effective[0].nonfinite_episodes[3].rfind("bad", 0), 0u);
  EXPECT_NE(effective[0].nonfinite_episodes[3].find(" utf8"), std::string::npos);
  std::vector<StepRecord> all = store->ListNonfiniteSteps(r.id, true, 10).value();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].step, 4);
  EXPECT_TRUE(all[1].superseded);
  EXPECT_EQ(all[1].nonfinite_episodes, std::vector<std::string>{"ep_9"});
  EXPECT_EQ(store->ListNonfiniteSteps(r.id, true, 1).value().size(), 1u);  // the limit holds
  // Applied steps carry no flag and no ids.
  std::vector<StepRecord> steps = store->ListSteps(r.id).value();
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_FALSE(steps[0].nonfinite);
  EXPECT_TRUE(steps[0].nonfinite_episodes.empty());
  EXPECT_FALSE(steps[4].nonfinite);  // the second attempt's step 4 went through
}

}  // namespace
}  // namespace baton
