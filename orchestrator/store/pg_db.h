// PgDb, PgStatement: the PostgreSQL backend of db.h, a thin RAII layer over libpq's C API (no
// ORM), used only by the store. One PgDb is one server connection: not thread-safe.
//
// Statements are the store's portable SQL with `?` placeholders translated (sql_dialect.h) and
// run with PQexecParams; a statement run again and again on one connection (from its third run),
// or one of 64 parameters or more (a batched write), is prepared on the server once and run with
// PQexecPrepared, so it is parsed and planned once (the server still plans the first runs for
// their values before it settles on a generic plan). A statement's whole result is fetched at its
// first Step; once a statement's result columns are known to be of types pg_values.h decodes,
// its later results come in binary form (no printing and parsing of doubles, no hex bytea).
// Values are bound as text (integers, doubles in round-trip form) or binary (BLOBs as bytea),
// never spliced. A write transaction is BEGIN plus pg_advisory_xact_lock on one key: writers queue
// one at a time as SQLite's BEGIN IMMEDIATE makes them, readers never wait. Connection errors map
// to Code::kUnavailable (exit 69) naming host:port or the user; the password is never in a message.
#pragma once

#include <libpq-fe.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "orchestrator/store/db.h"
#include "schema/status.h"

namespace baton {

class PgStatement final : public Statement {
 public:
  PgStatement(PGconn* conn, std::string sql);
  ~PgStatement() override;
  PgStatement(const PgStatement&) = delete;
  PgStatement& operator=(const PgStatement&) = delete;

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
  const char* sql() const override { return sql_.c_str(); }
  // The server forgot its prepared statements (a new session after a lost connection).
  void ForgetPrepared() {
    prepared_.clear();
    runs_ = 0;
  }

 private:
  struct Param {
    bool null = true;
    bool binary = false;
    unsigned type = 0;  // 0: the server infers it
    std::string value;
  };
  Param& At(int i);
  PGconn* conn_;
  std::string sql_;        // as the store wrote it
  std::string pg_sql_;     // with $N placeholders
  std::vector<int> used_;  // $k binds the store's parameter used_[k-1]
  std::vector<Param> params_;
  PGresult* result_ = nullptr;
  int row_ = -1;
  mutable std::map<int, std::string> blobs_;  // decoded bytea of the current row
  // Server-side prepared statements of this text, by parameter types (a NULL leaves a type to
  // the server, so one text may need more than one). Only for statements of many parameters:
  // the batched writes, whose parse and plan cost more than running them.
  std::map<std::vector<unsigned>, std::string> prepared_;
  int64_t runs_ = 0;         // runs on this connection
  int binary_results_ = -1;  // 1: results decode in binary form, 0: text only, -1: not yet known
  bool binary_ = false;      // the current result is in binary form
};

class PgDb final : public Db {
 public:
  ~PgDb() override;

  // Connects to the libpq URI `uri` (postgresql:// or postgres://), with connect_timeout 5 s
  // unless the URI says otherwise. Code::kInvalidArgument for a malformed URI,
  // kUnavailable for a server that cannot be reached or refuses the login.
  [[nodiscard]] static Result<std::unique_ptr<PgDb>> Open(const std::string& uri,
                                                          int busy_timeout_ms);

  Backend backend() const override { return Backend::kPostgres; }
  [[nodiscard]] Status Exec(const std::string& sql) override;
  [[nodiscard]] Result<Statement*> Prepare(const std::string& sql) override;
  [[nodiscard]] Result<int64_t> LastInsertId() override;
  bool InTransaction() const override;
  const std::string& path() const override { return shown_; }
  [[nodiscard]] Status CheckStillAtPath() const override { return Status::Ok(); }
  void ReleaseReadSnapshot() override {}
  [[nodiscard]] Status SetBusyTimeout(int ms) override;
  [[nodiscard]] Status SetQueryOnly() override;

 protected:
  [[nodiscard]] Status BeginWrite() override;
  [[nodiscard]] Status BeginRunWrite(int64_t run_id) override;

 private:
  PgDb(PGconn* conn, std::string shown) : conn_(conn), shown_(std::move(shown)) {}
  // BEGIN, then `lock` (a SELECT of advisory locks); marks the write transaction open.
  [[nodiscard]] Status BeginLocked(const std::string& lock);
  // Re-establishes a lost connection (outside a write transaction only).
  [[nodiscard]] Status Reconnect();
  PGconn* conn_;
  bool in_write_ = false;   // between BeginWrite and COMMIT/ROLLBACK
  bool read_only_ = false;  // SetQueryOnly was called
  int lock_timeout_ms_ = 10000;
  std::string shown_;  // the URI without its password
  std::map<std::string, std::unique_ptr<PgStatement>> cache_;
};

// Status of a failed libpq result or connection: kUnavailable for a lost or refused connection
// (SQLSTATE class 08, 57P0x, 53300) and for serialization failures, kInternal otherwise.
Status FromPg(PGconn* conn, const PGresult* res, const std::string& what);

}  // namespace baton
