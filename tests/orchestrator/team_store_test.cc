// One history for a lab, in the store (schema version 11): run owners and clusters with their
// filters, the attempt key that keeps equal job ids of two clusters apart, a version 10 database
// upgraded in place, the API tokens (hashed, one per user, constant-time compare) and the audit
// of write actions.
#include <gtest/gtest.h>

#include "orchestrator/embedded/embedded_files.h"
#include "orchestrator/store/run_history_queries.h"
#include "orchestrator/store/sql_dialect.h"
#include "orchestrator/store/store.h"
#include "orchestrator/store/store_audit.h"
#include "orchestrator/store/store_internal.h"
#include "orchestrator/store/store_spec.h"
#include "orchestrator/store/store_tokens.h"
#include "orchestrator/store/token_hash.h"
#include "test_util.h"

namespace baton {
namespace {

using test::OpenStore;
using test::TempDir;

int64_t AddRun(Store& store, const std::string& dir, const std::string& owner,
               const std::string& cluster) {
  int64_t id = 0;
  EXPECT_TRUE(store
                  .Write([&]() -> Status {
                    NewRun n;
                    n.name = "r-" + owner;
                    n.config = "run: {}";
                    n.run_dir = dir;
                    n.target_steps = 10;
                    n.owner = owner;
                    n.cluster = cluster;
                    BATON_ASSIGN_OR_RETURN(id, store.CreateRunInTx(n, 1.0));
                    return Status::Ok();
                  })
                  .ok());
  return id;
}

TEST(TeamStore, RunsKeepTheirOwnerAndClusterAndFilterByThem) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const int64_t a = AddRun(*store, "/runs/a", "alice", "north");
  const int64_t b = AddRun(*store, "/runs/b", "bob", "north");
  const int64_t c = AddRun(*store, "/runs/c", "alice", "south");
  EXPECT_EQ(store->GetRun(a).value().owner, "alice");
  EXPECT_EQ(store->GetRun(c).value().cluster, "south");

  auto ids = [](const std::vector<RunRecord>& runs) {
    std::vector<int64_t> out;
    for (const RunRecord& r : runs) out.push_back(r.id);
    return out;
  };
  EXPECT_EQ(ids(store->ListRuns(100, 0, {"alice", ""}).value()), (std::vector<int64_t>{c, a}));
  EXPECT_EQ(ids(store->ListRuns(100, 0, {"", "north"}).value()), (std::vector<int64_t>{b, a}));
  EXPECT_EQ(ids(store->ListRuns(100, 0, {"alice", "north"}).value()), (std::vector<int64_t>{a}));
  EXPECT_EQ(store->ListRuns(100, 0, {"carol", ""}).value().size(), 0u);
  EXPECT_EQ(store->ListRuns().value().size(), 3u);

  // The runs page's query takes the same filters.
  RunListQuery q;
  q.owner = "alice";
  q.cluster = "south";
  const RunSummaryPage page = ListRunSummaries(*store, q).value();
  EXPECT_EQ(page.total, 1);
  ASSERT_EQ(page.runs.size(), 1u);
  EXPECT_EQ(page.runs[0].run.id, c);
  EXPECT_EQ(page.runs[0].run.owner, "alice");

  ASSERT_TRUE(store->Write([&] { return store->SetRunClusterInTx(b, "south"); }).ok());
  EXPECT_EQ(store->GetRun(b).value().cluster, "south");
}

TEST(TeamStore, EqualJobIdsOfTwoClustersAreTwoAttempts) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const int64_t run = AddRun(*store, "/runs/a", "alice", "north");
  int64_t north = 0, south = 0, again = 0;
  ASSERT_TRUE(
      store
          ->Write([&]() -> Status {
            BATON_ASSIGN_OR_RETURN(north, store->EnsureAttemptInTx(run, "42", 0, 0, "north"));
            BATON_ASSIGN_OR_RETURN(south, store->EnsureAttemptInTx(run, "42", 0, 0, "south"));
            BATON_ASSIGN_OR_RETURN(again, store->EnsureAttemptInTx(run, "42", 0, 0, "north"));
            return Status::Ok();
          })
          .ok());
  EXPECT_NE(north, south);
  EXPECT_EQ(north, again);
  const std::vector<AttemptRecord> attempts = store->ListAttempts(run).value();
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].cluster, "north");
  EXPECT_EQ(attempts[1].cluster, "south");
  // An update by id never moves an attempt to another key.
  AttemptRecord a = attempts[0];
  a.nodes = "n1";
  ASSERT_TRUE(store->Write([&] { return store->UpdateAttemptInTx(a); }).ok());
  EXPECT_EQ(store->GetAttempt(north).value().cluster, "north");
}

// A database of schema version 10 with a run, an attempt, steps and a checkpoint: version 11
// rebuilds attempts (its key changes) and keeps every row, id and reference.
TEST(TeamStore, UpgradesAVersion10DatabaseKeepingEveryRow) {
  TempDir tmp;
  const std::string path = tmp / "baton.db";
  {
    // On either backend (under BATON_TEST_STORE a PostgreSQL database, where 008 and 011
    // rebuild a referenced table through the dialect's CASCADE and re-added keys).
    auto db = OpenDb(ParseStoreSpec(test::TestStore(path)).value(), kBusyTimeoutMs);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    const Backend backend = (*db)->backend();
    const bool pg = backend == Backend::kPostgres;
    if (!pg) {
      ASSERT_TRUE((*db)->Exec("PRAGMA foreign_keys = OFF").ok());
    }
    for (const EmbeddedFile& f : SqlMigrations()) {
      if (std::stoi(std::string(f.name).substr(0, 3)) > 10) continue;
      std::vector<std::string> keys;
      if (pg) keys = PgForeignKeysInto(**db, DroppedTables(f.text)).value();
      ASSERT_TRUE((*db)->Exec(MigrationText(backend, f.text)).ok()) << f.name;
      if (pg) {
        ASSERT_TRUE(PgAfterMigration(**db, keys).ok()) << f.name;
      }
    }
    ASSERT_TRUE((*db)->Exec(SetSchemaVersionSql(backend, 10)).ok());
    if (!pg) {
      ASSERT_TRUE((*db)->Exec("PRAGMA foreign_keys = ON").ok());
    }
    ASSERT_TRUE(
        (*db)
            ->Exec("INSERT INTO runs (id, name, status, config, run_dir, target_steps, "
                   "max_restarts, max_failures, created_at, updated_at, partition) VALUES "
                   "(5, 'old', 'REQUEUED', 'run: {}', '/runs/old', 10, 3, 3, 1, 1, 'gpu');"
                   "INSERT INTO attempts (id, run_id, job_id, restart_count, in_job_seq, "
                   "end_reason, hold_release_error) VALUES "
                   "(7, 5, '99', 0, 0, 'preempted', ''), (8, 5, '99', 1, 0, '', '');"
                   "INSERT INTO steps (run_id, attempt_id, step, time, loss) VALUES "
                   "(5, 7, 0, 5, 2.5), (5, 8, 1, 6, 2.0);"
                   "INSERT INTO checkpoints (run_id, step, attempt_id, path, bytes, reason, "
                   "valid, time) VALUES (5, 1, 7, '/runs/old/ckpt', 10, 'signal', 1, 6);")
            .ok());
  }
  auto store = OpenStore(path);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->SchemaVersion().value(), Store::LatestSchemaVersion());
  const RunRecord run = store->GetRun(5).value();
  EXPECT_EQ(run.partition, "gpu");
  EXPECT_EQ(run.owner, "");
  EXPECT_EQ(run.cluster, "");
  const std::vector<AttemptRecord> attempts = store->ListAttempts(5).value();
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].id, 7);
  EXPECT_EQ(attempts[0].end_reason, "preempted");
  EXPECT_EQ(attempts[1].id, 8);
  EXPECT_EQ(attempts[0].cluster, "");
  EXPECT_EQ(store->ListSteps(5).value().size(), 2u);
  EXPECT_EQ(store->ListCheckpoints(5).value().size(), 1u);
  // The old rows are found under their key with cluster '' (ingest goes on where it was).
  int64_t found = 0;
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    BATON_ASSIGN_OR_RETURN(found, store->EnsureAttemptInTx(5, "99", 1, 0, ""));
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(found, 8);
  // Deleting the run still cascades through the rebuilt table's foreign keys.
  ASSERT_TRUE(StoreInternal::Db(*store).Exec("DELETE FROM runs WHERE id = 5").ok());
  EXPECT_EQ(store->ListSteps(5).value().size(), 0u);
}

TEST(TokenHash, SaltedSha256AndConstantTimeCompare) {
  // SHA-256 of the bytes "abc" (salt "ab" = 0xab would differ): the empty salt hashes the token.
  EXPECT_EQ(TokenHash("", "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(TokenHash("00", "abc"), TokenHash("", "abc"));
  EXPECT_EQ(TokenHash("zz", "abc"), "");  // a salt that is not hex
  const std::string salt = RandomHex(kTokenSaltBytes).value();
  EXPECT_EQ(salt.size(), 2 * kTokenSaltBytes);
  EXPECT_NE(salt, RandomHex(kTokenSaltBytes).value());
  const std::string hash = TokenHash(salt, "secret");
  EXPECT_TRUE(TokenMatches("secret", salt, hash));
  EXPECT_FALSE(TokenMatches("secreT", salt, hash));
  EXPECT_FALSE(TokenMatches("", salt, hash));
  EXPECT_FALSE(TokenMatches("secret", salt, ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
}

TEST(TeamStore, TokensAreStoredHashedOnePerUser) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const std::string alice = AddApiToken(*store, "alice", false, 10).value();
  const std::string root = AddApiToken(*store, "root-admin", true, 11).value();
  EXPECT_EQ(alice.size(), 2 * kTokenBytes);
  EXPECT_NE(alice, root);

  // The secret is nowhere in the table.
  Statement* s = StoreInternal::Db(*store).Prepare("SELECT salt || hash FROM api_tokens").value();
  for (const std::string& row :
       s->Collect<std::string>([](const Statement& r) { return r.Text(0); }).value()) {
    EXPECT_EQ(row.find(alice), std::string::npos);
    EXPECT_EQ(row.find(root), std::string::npos);
  }

  std::optional<Identity> who = FindTokenIdentity(*store, alice).value();
  ASSERT_TRUE(who);
  EXPECT_EQ(who->user, "alice");
  EXPECT_FALSE(who->admin);
  who = FindTokenIdentity(*store, root).value();
  ASSERT_TRUE(who);
  EXPECT_TRUE(who->admin);
  EXPECT_FALSE(FindTokenIdentity(*store, alice.substr(1) + "0").value());
  EXPECT_FALSE(FindTokenIdentity(*store, "").value());

  Result<std::string> again = AddApiToken(*store, "alice", true, 12);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kInvalidArgument);
  EXPECT_NE(again.status().message().find("revoke"), std::string::npos);
  for (const std::string& bad :
       std::vector<std::string>{"", "a b", "x;DROP", std::string(65, 'a')}) {
    EXPECT_EQ(AddApiToken(*store, bad, false, 1).status().code(), Code::kInvalidArgument) << bad;
  }

  const std::vector<ApiTokenInfo> list = ListApiTokens(*store).value();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].user, "alice");
  EXPECT_EQ(list[1].user, "root-admin");
  EXPECT_TRUE(list[1].admin);
  EXPECT_DOUBLE_EQ(list[0].created_at, 10);

  ASSERT_TRUE(RevokeApiToken(*store, "alice").ok());
  EXPECT_FALSE(FindTokenIdentity(*store, alice).value());
  EXPECT_EQ(RevokeApiToken(*store, "alice").code(), Code::kNotFound);
  EXPECT_EQ(ListApiTokens(*store).value().size(), 1u);
  // Revoked, the user may have a new one (a different secret).
  EXPECT_NE(AddApiToken(*store, "alice", false, 13).value(), alice);
}

TEST(TeamStore, AuditKeepsEveryActionNewestFirst) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const int64_t run = AddRun(*store, "/runs/a", "alice", "");
  const int64_t other = AddRun(*store, "/runs/b", "bob", "");
  RunActionRecord a{0, run, "bob", "cancel", "web", 100, "denied", 403, "not yours"};
  const int64_t first = AppendRunAction(*store, a).value();
  a = {0, run, "alice", "cancel", "web", 101, "ok", 200, ""};
  const int64_t second = AppendRunAction(*store, a).value();
  a = {0, other, "bob", "resume", "cli", 102, "error", 0, "SLURM down"};
  ASSERT_TRUE(AppendRunAction(*store, a).ok());
  EXPECT_GT(second, first);

  const std::vector<RunActionRecord> rows = ListRunActions(*store, run, 10).value();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, second);
  EXPECT_EQ(rows[0].user, "alice");
  EXPECT_EQ(rows[0].result, "ok");
  EXPECT_EQ(rows[1].user, "bob");
  EXPECT_EQ(rows[1].result, "denied");
  EXPECT_EQ(rows[1].http_status, 403);
  EXPECT_EQ(rows[1].message, "not yours");
  EXPECT_DOUBLE_EQ(rows[1].asked_at, 100);
  EXPECT_EQ(CountRunActions(*store, run).value(), 2);
  EXPECT_EQ(ListRunActions(*store, run, 1, 1).value().at(0).id, first);
  EXPECT_EQ(ListRunActions(*store, other, 10).value().at(0).source, "cli");
}

}  // namespace
}  // namespace baton
