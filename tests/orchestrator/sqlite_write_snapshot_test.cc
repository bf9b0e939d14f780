// SqliteWriteSnapshot: a write transaction begun while one of the connection's statements is
// still mid-result. That statement holds a read snapshot; once another process has committed
// since, SQLite answers BEGIN IMMEDIATE with SQLITE_BUSY_SNAPSHOT at once, without the busy
// handler, which a CLI command syncing beside `baton watch` reported as "database is locked".
#include <gtest/gtest.h>

#include "orchestrator/store/db.h"
#include "orchestrator/store/sqlite_db.h"
#include "orchestrator/store/store.h"
#include "test_util.h"

namespace baton {
namespace {

TEST(SqliteWriteSnapshot, AWriteBegunAfterAnUnfinishedReadSeesNoStaleSnapshot) {
  test::TempDir dir;
  const std::string path = dir.path() + "/w.db";
  auto a = SqliteDb::Open(path, kBusyTimeoutMs);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = SqliteDb::Open(path, kBusyTimeoutMs);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE((*a)->Exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);").ok());

  auto read = (*a)->Prepare("SELECT x FROM t ORDER BY x");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  auto row = (*read)->Step();
  ASSERT_TRUE(row.ok() && *row);  // one row read, one left: the snapshot stays open
  ASSERT_TRUE((*b)->Exec("INSERT INTO t VALUES (3)").ok());

  auto tx = Transaction::Begin(**a);
  ASSERT_TRUE(tx.ok()) << tx.status().ToString();
  ASSERT_TRUE((*a)->Exec("INSERT INTO t VALUES (4)").ok());
  ASSERT_TRUE(tx->Commit().ok());
  auto count = (*b)->Prepare("SELECT COUNT(*) FROM t");
  ASSERT_TRUE(count.ok());
  auto has = (*count)->Step();
  ASSERT_TRUE(has.ok() && *has);
  EXPECT_EQ((*count)->Int(0), 4);
}

}  // namespace
}  // namespace baton
