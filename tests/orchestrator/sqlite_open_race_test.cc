// SqliteOpenRace: processes that open one new database file at the same moment (a first
// `baton watch` and a `baton submit` on a fresh BATON_HOME) all get it, in WAL mode. SQLite
// answers the losers of the WAL switch BUSY at once, so without SqliteDb's own wait one of a few
// hundred such races fails.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "orchestrator/store/sqlite_db.h"
#include "orchestrator/store/store.h"
#include "test_util.h"

namespace baton {
namespace {

// In a child: 0 when the database opened and took a write transaction (as a first watch's
// migrations do, which is what the other openers' WAL switch then collides with), 1 otherwise.
int OpenInChild(const std::string& path) {
  auto db = SqliteDb::Open(path, kBusyTimeoutMs);
  if (!db.ok()) return 1;
  std::string sql = "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS t (x INTEGER);";
  for (int i = 0; i < 200; ++i) sql += "INSERT INTO t VALUES (" + std::to_string(i) + ");";
  return (*db)->Exec(sql + "COMMIT;").ok() ? 0 : 1;
}

TEST(SqliteOpenRace, ProcessesOpeningANewDatabaseAtOnceAllGetIt) {
  test::TempDir dir;
  constexpr int kRounds = 300, kOpeners = 3;
  int failed = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = dir.path() + "/r" + std::to_string(round) + ".db";
    std::vector<pid_t> children;
    for (int k = 0; k < kOpeners; ++k) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) _exit(OpenInChild(path));
      children.push_back(pid);
    }
    for (pid_t pid : children) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << kRounds * kOpeners << " openers failed";
}

}  // namespace
}  // namespace baton
