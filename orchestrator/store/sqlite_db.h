// SqliteDb, Statement, Transaction: a thin RAII layer over the SQLite C API, used only by the
// store (orchestrator/store/store.h) — nothing else in baton speaks SQL.
//
// Every statement is prepared once per connection and cached by its SQL text; values are always
// bound, never spliced into SQL. Transactions are `BEGIN IMMEDIATE` (take the write lock up
// front, so two writers never deadlock on a lock upgrade) and roll back in the destructor unless
// Commit() succeeded. One SqliteDb is one connection: not thread-safe, use one per thread.
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

#include "schema/status.h"

namespace baton {

// A prepared statement. Bind*() return *this for chaining; a bind error is kept and reported
// by the next Step()/Run(). Owned by its SqliteDb's cache; valid while the SqliteDb lives.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite.
  Statement& Bind(int i, int64_t v);
  Statement& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Statement& Bind(int i, double v);  // NaN binds NULL
  Statement& Bind(int i, const std::string& v);
  Statement& Bind(int i, const char* v) { return Bind(i, std::string(v)); }
  Statement& BindNull(int i);
  Statement& BindBlob(int i, const std::string& bytes);
  template <class T>
  Statement& Bind(int i, const std::optional<T>& v) {
    return v.has_value() ? Bind(i, *v) : BindNull(i);
  }

  // Advances one row: true when a row is available, false when done.
  [[nodiscard]] Result<bool> Step();
  // Steps to completion (INSERT/UPDATE/DELETE).
  [[nodiscard]] Status Run();
  // Steps through every row and returns read(*this) of each (SELECT of many rows).
  template <class T, class Read>
  [[nodiscard]] Result<std::vector<T>> Collect(Read read) {
    std::vector<T> out;
    while (true) {
      BATON_ASSIGN_OR_RETURN(const bool row, Step());
      if (!row) return out;
      out.push_back(read(*this));
    }
  }

  // Columns are 0-based, as in SQLite.
  bool IsNull(int col) const;
  int64_t Int(int col) const;
  double Double(int col) const;  // NULL reads as NaN
  std::string Text(int col) const;
  std::optional<int64_t> OptInt(int col) const;
  std::optional<double> OptDouble(int col) const;
  // A BLOB column's bytes (valid until the next Step/Reset) and its size.
  const void* BlobData(int col) const;
  size_t BlobSize(int col) const;

  // Clears bindings and rewinds (SqliteDb::Prepare does this for you).
  void Reset();
  const char* sql() const { return sqlite3_sql(stmt_); }

 private:
  Status Error(int rc) const;
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int bind_error_ = SQLITE_OK;
};

class SqliteDb {
 public:
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Opens (creating) `path` with WAL, foreign keys and a busy timeout. ":memory:" works too.
  [[nodiscard]] static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path,
                                                              int busy_timeout_ms);

  // Runs SQL text without parameters (migrations, pragmas). Never for values.
  [[nodiscard]] Status Exec(const std::string& sql);
  // The cached prepared statement for `sql`, reset and with cleared bindings. Do not hold two
  // uses of the same SQL text at once.
  [[nodiscard]] Result<Statement*> Prepare(const std::string& sql);

  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
  const std::string& path() const { return path_; }
  sqlite3* raw() { return db_; }
  // Code::kIo when the file at path() is gone or is another file than the one opened (deleted,
  // or replaced by a rename): a long-lived process would go on writing into an unlinked file
  // while every other process creates or reads the new one. Ok for ":memory:".
  [[nodiscard]] Status CheckStillAtPath() const;

  // Called by Transaction::Commit before COMMIT (a failure keeps the transaction uncommitted,
  // so the destructor rolls it back), and after every commit or rollback. The store keeps its
  // derived tables (series rollups) in the transaction of the rows they summarise with these.
  void SetTransactionHooks(std::function<Status()> before_commit, std::function<void()> on_end) {
    before_commit_ = std::move(before_commit);
    on_end_ = std::move(on_end);
  }

 private:
  friend class Transaction;
  std::function<Status()> before_commit_;
  std::function<void()> on_end_;
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  std::optional<std::pair<uint64_t, uint64_t>> identity_;  // st_dev, st_ino at Open
  std::map<std::string, std::unique_ptr<Statement>> cache_;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back on destruction unless committed. Movable, not copyable.
class Transaction {
 public:
  [[nodiscard]] static Result<Transaction> Begin(SqliteDb& db);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  [[nodiscard]] Status Commit();
  // Explicit rollback (the destructor does the same).
  void Rollback();

 private:
  explicit Transaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;
};

}  // namespace baton
