// SqliteDb, SqliteStatement: the SQLite backend of db.h, a thin RAII layer over the SQLite C API,
// used only by the store (orchestrator/store/store.h) — nothing else in baton speaks SQL.
//
// Every statement is prepared once per connection and cached by its SQL text; values are always
// bound, never spliced into SQL. Transactions are `BEGIN IMMEDIATE` (take the write lock up
// front, so two writers never deadlock on a lock upgrade). One SqliteDb is one connection: not
// thread-safe, use one per thread.
#pragma once

#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/db.h"
#include "schema/status.h"

namespace baton {

// A prepared SQLite statement (db.h's Statement).
class SqliteStatement final : public Statement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~SqliteStatement() override;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  using Statement::Bind;
  Statement& Bind(int i, int64_t v) override;
  Statement& Bind(int i, double v) override;
  Statement& Bind(int i, const std::string& v) override;
  Statement& BindNull(int i) override;
  Statement& BindBlob(int i, const std::string& bytes) override;
  [[nodiscard]] Result<bool> Step() override;
  bool IsNull(int col) const override;
  int64_t Int(int col) const override;
  double Double(int col) const override;
  std::string Text(int col) const override;
  const void* BlobData(int col) const override;
  size_t BlobSize(int col) const override;
  void Reset() override;
  const char* sql() const override { return sqlite3_sql(stmt_); }

 private:
  Status Error(int rc) const;
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int bind_error_ = SQLITE_OK;
};

class SqliteDb final : public Db {
 public:
  ~SqliteDb() override;

  // Opens (creating) `path` with WAL, foreign keys and a busy timeout. ":memory:" works too.
  [[nodiscard]] static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path,
                                                              int busy_timeout_ms);

  // Runs SQL text without parameters (migrations, pragmas). Never for values.
  Backend backend() const override { return Backend::kSqlite; }
  [[nodiscard]] Status Exec(const std::string& sql) override;
  // The cached prepared statement for `sql`, reset and with cleared bindings. Do not hold two
  // uses of the same SQL text at once.
  [[nodiscard]] Result<Statement*> Prepare(const std::string& sql) override;

  [[nodiscard]] Result<int64_t> LastInsertId() override { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  bool InTransaction() const override { return sqlite3_get_autocommit(db_) == 0; }
  const std::string& path() const override { return path_; }
  sqlite3* raw() { return db_; }
  // Code::kIo when the file at path() is gone or is another file than the one opened (deleted,
  // or replaced by a rename): a long-lived process would go on writing into an unlinked file
  // while every other process creates or reads the new one. Ok for ":memory:".
  [[nodiscard]] Status CheckStillAtPath() const override;
  void ReleaseReadSnapshot() override;
  [[nodiscard]] Status SetBusyTimeout(int ms) override {
    sqlite3_busy_timeout(db_, ms);
    return Status::Ok();
  }
  [[nodiscard]] Status SetQueryOnly() override { return Exec("PRAGMA query_only = ON"); }

 protected:
  // BEGIN IMMEDIATE once no statement of this connection holds a read snapshot.
  [[nodiscard]] Status BeginWrite() override;

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // PRAGMA journal_mode = WAL, retried while another opener holds the lock it needs.
  [[nodiscard]] Status SetWalMode(int busy_timeout_ms);
  sqlite3* db_;
  std::string path_;
  std::optional<std::pair<uint64_t, uint64_t>> identity_;  // st_dev, st_ino at Open
  std::map<std::string, std::unique_ptr<SqliteStatement>> cache_;
};

}  // namespace baton
