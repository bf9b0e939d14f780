// StoreCheck: a version 6 store whose rows point at rows that are not there stops migration 008
// with the rows named (not a bare internal error); `baton store check` lists them without
// changing anything, `--repair` deletes them (and what belongs to them) in one transaction, and
// the store then opens and migrates with every other row kept. The check's references are the
// schema's own REFERENCES clauses.
#include "orchestrator/store/store_check.h"
#include "orchestrator/store/sqlite_db.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "orchestrator/embedded/embedded_files.h"
#include "orchestrator/store/store.h"
#include "test_util.h"

namespace baton {
namespace {

using test::TempDir;

// Applies migrations 001 .. `version` as the baton of that version would have, then fills it:
// run 1 with attempt 1 and its steps 0..2 and a checkpoint; dangling, with foreign keys off as
// an old tool might have left them: a step of attempt 99, a checkpoint of attempt 98 (which
// the schema would set NULL), and attempt 5 of run 77 with a step of its own.
void WriteOldStore(const std::string& path, int version) {
  auto db = SqliteDb::Open(path, kBusyTimeoutMs);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  for (const EmbeddedFile& f : SqlMigrations()) {
    const int number = std::stoi(std::string(f.name).substr(0, 3));
    if (number > version) continue;
    ASSERT_TRUE((*db)->Exec(f.text).ok()) << f.name;
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version = " + std::to_string(number)).ok());
  }
  ASSERT_TRUE((*db)->Exec("PRAGMA foreign_keys = OFF").ok());
  const Status st = (*db)->Exec(
      "INSERT INTO runs (id, name, status, config, run_dir, target_steps, max_restarts, "
      "max_failures, created_at, updated_at) VALUES (1, 'kept', 'FAILED', 'run: {}', '/r', 10, "
      "3, 3, 1, 1);"
      "INSERT INTO attempts (id, run_id, job_id, restart_count) VALUES (1, 1, '7', 0), "
      "(5, 77, '9', 0);"
      "INSERT INTO steps (run_id, attempt_id, step, time) VALUES (1, 1, 0, 5), (1, 1, 1, 6), "
      "(1, 1, 2, 7), (1, 99, 3, 8), (77, 5, 0, 9);"
      "INSERT INTO checkpoints (run_id, step, attempt_id, path, time) VALUES "
      "(1, 2, 1, '/c/2', 7), (1, 3, 98, '/c/3', 8);");
  ASSERT_TRUE(st.ok()) << st.ToString();
}

TEST(StoreCheck, AMigrationStopsOnDanglingRowsAndNamesThem) {
  TempDir tmp;
  const std::string path = tmp / "baton.db";
  WriteOldStore(path, 6);
  Result<std::unique_ptr<Store>> store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  const Status& st = store.status();
  EXPECT_EQ(st.code(), Code::kData) << st.ToString();
  for (const char* part : {"migration 008_in_job_restarts.sql stopped",
                           "steps (attempt_id 99, step 3): attempt_id 99 names no row of attempts",
                           "attempts (id 5): run_id 77 names no row of runs",
                           "the database stays at version 7", "baton store check --repair"}) {
    EXPECT_NE(st.message().find(part), std::string::npos) << part << "\n" << st.ToString();
  }
}

TEST(StoreCheck, ListsWithoutChangingThenRepairsInOneGo) {
  TempDir tmp;
  const std::string path = tmp / "baton.db";
  WriteOldStore(path, 6);

  const StoreCheckReport listed = CheckStoreFile(path, /*repair=*/false).value();
  EXPECT_FALSE(listed.repaired);
  EXPECT_EQ(listed.dangling_rows(), 4);  // attempt 5, its step, the step of 99, checkpoint 3
  ASSERT_EQ(listed.dangling.size(), 4u);
  EXPECT_EQ(listed.dangling[0].table, "attempts");
  ASSERT_EQ(listed.dangling[0].rows.size(), 1u);
  EXPECT_EQ(listed.dangling[0].rows[0].first, "id 5");
  EXPECT_EQ(listed.dangling[0].rows[0].second, 77);
  EXPECT_TRUE(listed.dangling[3].sets_null);  // checkpoints.attempt_id
  EXPECT_FALSE(Store::Open(path).ok());       // the check changed nothing

  const StoreCheckReport repaired = CheckStoreFile(path, /*repair=*/true).value();
  EXPECT_TRUE(repaired.repaired);
  EXPECT_EQ(repaired.dangling_rows(), 4);
  std::set<std::pair<std::string, int64_t>> removed(repaired.removed.begin(),
                                                    repaired.removed.end());
  EXPECT_EQ(removed, (std::set<std::pair<std::string, int64_t>>{{"attempts", 1}, {"steps", 2}}));
  EXPECT_TRUE(CheckStoreFile(path, false).value().dangling.empty());

  // Now the store opens, migrates to the latest version, and keeps every other row (SQLite: the
  // rows above dangle only because SQLite's foreign keys could be off).
  Result<std::unique_ptr<Store>> opened = Store::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<Store> store = std::move(opened).value();
  EXPECT_EQ(store->SchemaVersion().value(), Store::LatestSchemaVersion());
  EXPECT_EQ(store->ListSteps(1).value().size(), 3u);
  const std::vector<CheckpointRecord> ckpts = store->ListCheckpoints(1).value();
  ASSERT_EQ(ckpts.size(), 2u);
  for (const CheckpointRecord& c : ckpts) {
    // Step 2's attempt is there; step 3's was set NULL, as deleting attempt 98 would.
    if (c.step == 2) {
      EXPECT_EQ(c.attempt_id, 1);
    }
    if (c.step == 3) {
      EXPECT_FALSE(c.attempt_id.has_value());
    }
  }
}

TEST(StoreCheck, ACurrentCleanStoreHasNothingToRepair) {
  TempDir tmp;
  const std::string path = tmp / "baton.db";
  ASSERT_TRUE(test::OpenStore(path));
  const StoreCheckReport r = CheckStoreFile(test::TestStore(path), /*repair=*/true).value();
  EXPECT_TRUE(r.dangling.empty());
  EXPECT_FALSE(r.repaired);
  EXPECT_EQ(CheckStoreFile(tmp / "missing.db", false).status().code(), Code::kIo);
}

// Every `column ... REFERENCES parent` of schema/sql is one of the check's references (a new
// foreign key in a migration must be added there), and the check names no other.
TEST(StoreCheck, KnowsEveryReferenceOfTheSchema) {
  std::set<std::string> in_sql, in_check;
  const std::regex table_re(R"(CREATE TABLE (\w+))");
  const std::regex ref_re(R"(^\s*(\w+)\s+INTEGER[^\n]*REFERENCES\s+(\w+))");
  for (const EmbeddedFile& f : SqlMigrations()) {
    std::string table;
    std::istringstream lines(f.text);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_search(line, m, table_re))
        table = m[1].str().rfind("attempts_v", 0) == 0 ? "attempts" : m[1].str();
      if (std::regex_search(line, m, ref_re))
        in_sql.insert(table + "." + m[1].str() + "->" + m[2].str());
    }
  }
  for (const SchemaReference& r : SchemaReferences()) {
    in_check.insert(std::string(r.table) + "." + r.column + "->" + r.parent);
  }
  EXPECT_EQ(in_sql, in_check);
}

}  // namespace
}  // namespace baton
