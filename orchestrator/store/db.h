// Db, Statement, Transaction: the backend-neutral SQL layer of the store. Two implementations sit
// behind it: SqliteDb (sqlite_db.h, the embedded default) and PgDb (pg_db.h, libpq). Only
// orchestrator/store/ uses it — nothing else in baton speaks SQL.
//
// Store code writes one SQL text for both backends with `?N` / `?` placeholders; what differs
// between them (placeholders, types in migrations, the schema version, rebuilding a referenced
// table) is translated in one place, sql_dialect.h. Values are always bound, never spliced into
// SQL. A Transaction takes the write lock up front (SQLite: BEGIN IMMEDIATE; PostgreSQL: BEGIN
// and a transaction-scoped advisory lock), so two writers never interleave, and rolls back in
// its destructor unless Commit() succeeded. One Db is one connection: not thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

enum class Backend { kSqlite, kPostgres };

// A prepared statement. Bind*() return *this for chaining; a bind error is kept and reported
// by the next Step()/Run(). Owned by its Db's cache; valid while the Db lives.
class Statement {
 public:
  virtual ~Statement() = default;

  // Parameters are 1-based.
  virtual Statement& Bind(int i, int64_t v) = 0;
  Statement& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  virtual Statement& Bind(int i, double v) = 0;  // NaN binds NULL
  virtual Statement& Bind(int i, const std::string& v) = 0;
  Statement& Bind(int i, const char* v) { return Bind(i, std::string(v)); }
  virtual Statement& BindNull(int i) = 0;
  virtual Statement& BindBlob(int i, const std::string& bytes) = 0;
  template <class T>
  Statement& Bind(int i, const std::optional<T>& v) {
    return v.has_value() ? Bind(i, *v) : BindNull(i);
  }

  // Advances one row: true when a row is available, false when done.
  [[nodiscard]] virtual Result<bool> Step() = 0;
  // Steps to completion (INSERT/UPDATE/DELETE).
  [[nodiscard]] Status Run() {
    while (true) {
      BATON_ASSIGN_OR_RETURN(const bool row, Step());
      if (!row) return Status::Ok();
    }
  }
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

  // Columns are 0-based.
  virtual bool IsNull(int col) const = 0;
  virtual int64_t Int(int col) const = 0;
  virtual double Double(int col) const = 0;  // NULL reads as NaN
  virtual std::string Text(int col) const = 0;
  std::optional<int64_t> OptInt(int col) const {
    if (IsNull(col)) return std::nullopt;
    return Int(col);
  }
  std::optional<double> OptDouble(int col) const {
    if (IsNull(col)) return std::nullopt;
    return Double(col);
  }
  // A BLOB column's bytes (valid until the next Step/Reset) and its size.
  virtual const void* BlobData(int col) const = 0;
  virtual size_t BlobSize(int col) const = 0;

  // Clears bindings and rewinds (Db::Prepare does this for you).
  virtual void Reset() = 0;
  virtual const char* sql() const = 0;
};

class Db {
 public:
  virtual ~Db() = default;
  Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  virtual Backend backend() const = 0;
  // Runs SQL text without parameters (migrations). Never for values.
  [[nodiscard]] virtual Status Exec(const std::string& sql) = 0;
  // The cached prepared statement for `sql`, reset and with cleared bindings. Do not hold two
  // uses of the same SQL text at once.
  [[nodiscard]] virtual Result<Statement*> Prepare(const std::string& sql) = 0;
  // The id the last INSERT of this connection gave its row.
  [[nodiscard]] virtual Result<int64_t> LastInsertId() = 0;
  virtual bool InTransaction() const = 0;
  // What the user named: the file's path, or the URI with its password removed.
  virtual const std::string& path() const = 0;
  // Code::kIo when a SQLite file at path() is gone or replaced (a long-lived process would go on
  // writing into an unlinked file); Ok for a server.
  [[nodiscard]] virtual Status CheckStillAtPath() const = 0;
  // Rewinds every statement, so no finished read pins an old snapshot.
  virtual void ReleaseReadSnapshot() = 0;
  // How long a writer waits for another's write lock before Code::kUnavailable.
  [[nodiscard]] virtual Status SetBusyTimeout(int ms) = 0;
  // Refuses writes on this connection from now on (the web server's readers).
  [[nodiscard]] virtual Status SetQueryOnly() = 0;

  // Called by Transaction::Commit before COMMIT (a failure keeps the transaction uncommitted,
  // so the destructor rolls it back), and after every commit or rollback. The store keeps its
  // derived tables (series rollups) in the transaction of the rows they summarise with these.
  void SetTransactionHooks(std::function<Status()> before_commit, std::function<void()> on_end) {
    before_commit_ = std::move(before_commit);
    on_end_ = std::move(on_end);
  }

 protected:
  // Opens a transaction holding the write lock.
  [[nodiscard]] virtual Status BeginWrite() = 0;
  // Opens a transaction for writes that touch only one run's rows (ingest). A backend that can
  // lets such writers of different runs go on side by side while excluding every BeginWrite
  // writer; by default it is BeginWrite (SQLite: one writer at a time).
  [[nodiscard]] virtual Status BeginRunWrite(int64_t /*run_id*/) { return BeginWrite(); }

 private:
  friend class Transaction;
  std::function<Status()> before_commit_;
  std::function<void()> on_end_;
};

// Begin ... COMMIT; rolls back on destruction unless committed. Movable, not copyable.
class Transaction {
 public:
  [[nodiscard]] static Result<Transaction> Begin(Db& db);
  // Db::BeginRunWrite: a transaction whose writes touch only run `run_id`'s rows.
  [[nodiscard]] static Result<Transaction> BeginForRun(Db& db, int64_t run_id);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  [[nodiscard]] Status Commit();
  // Explicit rollback (the destructor does the same).
  void Rollback();

 private:
  explicit Transaction(Db* db) : db_(db) {}
  Db* db_;
};

}  // namespace baton
