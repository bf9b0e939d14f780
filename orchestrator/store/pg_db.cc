#include "orchestrator/store/pg_db.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <regex>

#include "orchestrator/store/pg_values.h"
#include "orchestrator/store/sql_dialect.h"
#include "orchestrator/store/store_spec.h"

namespace baton {

namespace {

constexpr unsigned kInt8Oid = 20;
constexpr unsigned kFloat8Oid = 701;
constexpr unsigned kByteaOid = 17;
constexpr const char* kDefaultConnectTimeoutS = "5";
// Statements with at least this many parameters are prepared on the server at once, others from
// their kPrepareFromRun-th run on the connection (pg_db.h).
constexpr size_t kPrepareFromParams = 64;
constexpr int64_t kPrepareFromRun = 3;

// libpq's message on one line: its own line breaks become "; ".
std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "; ";
    } else if (c != '\t') {
      out += c;
    }
  }
  return out;
}

std::string Where(PGconn* conn) {
  const char* host = PQhost(conn);
  const char* port = PQport(conn);
  std::string h = host != nullptr && *host != '\0' ? host : "localhost";
  return h + ":" + (port != nullptr && *port != '\0' ? port : "5432");
}

void IgnoreNotice(void* /*arg*/, const char* /*message*/) {}

// A URI option's value as libpq parsed it ("" when absent).
std::string Option(PQconninfoOption* opts, const char* key) {
  for (PQconninfoOption* o = opts; o != nullptr && o->keyword != nullptr; ++o) {
    if (std::strcmp(o->keyword, key) == 0 && o->val != nullptr) return o->val;
  }
  return "";
}

}  // namespace

Status FromPg(PGconn* conn, const PGresult* res, const std::string& what) {
  const char* msg = res != nullptr ? PQresultErrorMessage(res) : nullptr;
  const std::string text =
      what + ": " + Trim(msg != nullptr && *msg != '\0' ? msg : PQerrorMessage(conn));
  if (PQstatus(conn) == CONNECTION_BAD) {
    return Status::Unavailable(text + " (lost the connection to the PostgreSQL server at " +
                               Where(conn) + ")");
  }
  const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  const std::string code = state != nullptr ? state : "";
  if (code == "55P03") {
    return Status::Unavailable(text + " (the database is locked by another baton process)");
  }
  if (code.rfind("08", 0) == 0 || code.rfind("57P", 0) == 0 || code == "40001" || code == "40P01" ||
      code == "53300") {
    return Status::Unavailable(text);
  }
  if (code.rfind("53", 0) == 0 || code == "25006" || code.rfind("42501", 0) == 0) {
    return Status::Io(text);
  }
  return Status::Internal(text);
}

// ------------------------------------------------------------------------------ statement

PgStatement::PgStatement(PGconn* conn, std::string sql) : conn_(conn), sql_(std::move(sql)) {
  pg_sql_ = PgStatementText(sql_, &used_);
}

PgStatement::~PgStatement() { Reset(); }

PgStatement::Param& PgStatement::At(int i) {
  if (i > static_cast<int>(params_.size())) params_.resize(static_cast<size_t>(i));
  return params_[static_cast<size_t>(i - 1)];
}

Statement& PgStatement::Bind(int i, int64_t v) {
  At(i) = Param{false, false, kInt8Oid, std::to_string(v)};
  return *this;
}

Statement& PgStatement::Bind(int i, double v) {
  if (std::isnan(v)) return BindNull(i);
  At(i) = Param{false, false, kFloat8Oid, PgFormatDouble(v)};
  return *this;
}

Statement& PgStatement::Bind(int i, const std::string& v) {
  At(i) = Param{false, false, 0, v};
  return *this;
}

Statement& PgStatement::BindNull(int i) {
  At(i) = Param{};
  return *this;
}

Statement& PgStatement::BindBlob(int i, const std::string& bytes) {
  At(i) = Param{false, true, kByteaOid, bytes};
  return *this;
}

Result<bool> PgStatement::Step() {
  if (result_ == nullptr) {
    const size_t n = used_.size();
    std::vector<unsigned> types(n);
    std::vector<const char*> values(n);
    std::vector<int> lengths(n), formats(n);
    const Param unbound;  // a parameter never bound is NULL, as in SQLite
    for (size_t k = 0; k < n; ++k) {
      const size_t i = static_cast<size_t>(used_[k] - 1);
      const Param& p = i < params_.size() ? params_[i] : unbound;
      types[k] = p.type;
      values[k] = p.null ? nullptr : p.value.data();
      lengths[k] = static_cast<int>(p.value.size());
      formats[k] = p.binary ? 1 : 0;
    }
    ++runs_;
    // A result whose columns all decode in binary form (known from an earlier run) comes in it.
    const int result_format = binary_results_ == 1 ? 1 : 0;
    if (n >= kPrepareFromParams || runs_ >= kPrepareFromRun) {
      auto it = prepared_.find(types);
      if (it == prepared_.end()) {
        static std::atomic<uint64_t> next{0};
        const std::string name = "baton_" + std::to_string(++next);
        PGresult* prep =
            PQprepare(conn_, name.c_str(), pg_sql_.c_str(), static_cast<int>(n), types.data());
        if (PQresultStatus(prep) != PGRES_COMMAND_OK) {
          Status err = FromPg(conn_, prep, "postgresql: " + sql_);
          PQclear(prep);
          return err;
        }
        PQclear(prep);
        it = prepared_.emplace(types, name).first;
      }
      result_ = PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(n), values.data(),
                               lengths.data(), formats.data(), result_format);
    } else {
      result_ = PQexecParams(conn_, pg_sql_.c_str(), static_cast<int>(n), types.data(),
                             values.data(), lengths.data(), formats.data(), result_format);
    }
    binary_ = result_format == 1;
    const ExecStatusType st = PQresultStatus(result_);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
      Status err = FromPg(conn_, result_, "postgresql: " + sql_);
      PQclear(result_);
      result_ = nullptr;
      return err;
    }
    if (binary_results_ < 0 && st == PGRES_TUPLES_OK) binary_results_ = PgBinaryReadable(result_);
    row_ = -1;
  }
  blobs_.clear();
  ++row_;
  return row_ < PQntuples(result_);
}

bool PgStatement::IsNull(int col) const {
  return result_ == nullptr || row_ < 0 || row_ >= PQntuples(result_) ||
         col >= PQnfields(result_) || PQgetisnull(result_, row_, col) != 0;
}

int64_t PgStatement::Int(int col) const {
  return IsNull(col) ? 0 : PgInt(result_, row_, col, binary_);
}

double PgStatement::Double(int col) const {
  if (IsNull(col)) return std::numeric_limits<double>::quiet_NaN();
  return PgDouble(result_, row_, col, binary_);
}

std::string PgStatement::Text(int col) const {
  return IsNull(col) ? std::string() : PgText(result_, row_, col, binary_);
}

const void* PgStatement::BlobData(int col) const {
  if (IsNull(col)) return nullptr;
  // A binary result holds the bytes themselves.
  if (binary_) return PQgetvalue(result_, row_, col);
  auto it = blobs_.find(col);
  if (it == blobs_.end()) it = blobs_.emplace(col, PgBytes(result_, row_, col, false)).first;
  return it->second.data();
}

size_t PgStatement::BlobSize(int col) const {
  if (IsNull(col)) return 0;
  if (binary_) return static_cast<size_t>(PQgetlength(result_, row_, col));
  (void)BlobData(col);
  return blobs_.at(col).size();
}

void PgStatement::Reset() {
  if (result_ != nullptr) PQclear(result_);
  result_ = nullptr;
  row_ = -1;
  params_.clear();
  blobs_.clear();
}

// ------------------------------------------------------------------------------ connection

PgDb::~PgDb() {
  cache_.clear();
  PQfinish(conn_);
}

Result<std::unique_ptr<PgDb>> PgDb::Open(const std::string& uri, int busy_timeout_ms) {
  const std::string shown = ScrubPassword(uri);
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(uri.c_str(), &err);
  if (opts == nullptr) {
    std::string why = err != nullptr ? Trim(err) : "out of memory";
    PQfreemem(err);
    return Status::InvalidArgument("store " + shown + ": not a valid PostgreSQL URI: " + why);
  }
  const bool has_timeout =
      !Option(opts, "connect_timeout").empty() || std::getenv("PGCONNECT_TIMEOUT") != nullptr;
  const std::string port = Option(opts, "port");
  PQconninfoFree(opts);
  if (port.find_first_not_of("0123456789,") != std::string::npos) {
    return Status::InvalidArgument("store " + shown + ": not a valid PostgreSQL URI: port '" +
                                   port + "' is not a number");
  }
  // A later keyword overrides what the URI expands to, so the default timeout goes in only when
  // neither the URI nor PGCONNECT_TIMEOUT names one.
  const char* keys[] = {"dbname", "fallback_application_name", "connect_timeout", nullptr};
  const char* vals[] = {uri.c_str(), "baton", kDefaultConnectTimeoutS, nullptr};
  if (has_timeout) keys[2] = nullptr;
  PGconn* conn = PQconnectdbParams(keys, vals, /*expand_dbname=*/1);
  if (conn == nullptr) return Status::Internal("postgresql: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string reason = Trim(PQerrorMessage(conn));
    const char* user = PQuser(conn);
    const bool auth = PQconnectionNeedsPassword(conn) != 0 || PQconnectionUsedPassword(conn) != 0 ||
                      reason.find("authentication") != std::string::npos ||
                      reason.find("password") != std::string::npos ||
                      reason.find("role ") != std::string::npos;
    Status st = auth ? Status::Unavailable("store " + shown + ": PostgreSQL at " + Where(conn) +
                                           " refused user " + (user ? user : "?") + ": " + reason)
                     : Status::Unavailable("store " + shown + ": cannot reach PostgreSQL at " +
                                           Where(conn) + ": " + reason);
    PQfinish(conn);
    return st;
  }
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  std::unique_ptr<PgDb> db(new PgDb(conn, shown));
  // A writer waits for another's lock as long as SQLite's busy timeout, then gives up (69).
  BATON_RETURN_IF_ERROR(db->SetBusyTimeout(busy_timeout_ms));
  BATON_RETURN_IF_ERROR(db->Exec("SET client_min_messages = warning"));
  return db;
}

Status PgDb::Exec(const std::string& sql) {
  const bool ending = sql == "COMMIT" || sql == "ROLLBACK";
  PGresult* res = PQexec(conn_, sql.c_str());
  const ExecStatusType st = PQresultStatus(res);
  Status out = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK
                   ? Status::Ok()
                   : FromPg(conn_, res, "postgresql " + shown_);
  PQclear(res);
  if (ending) in_write_ = false;
  return out;
}

Status PgDb::Reconnect() {
  if (PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
  // Outside a transaction only: a write cut off mid-way was rolled back by the server, and the
  // caller retries it whole.
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Status::Unavailable("store " + shown_ + ": lost PostgreSQL at " + Where(conn_) + ": " +
                               Trim(PQerrorMessage(conn_)));
  }
  PQsetNoticeProcessor(conn_, IgnoreNotice, nullptr);
  for (auto& [text, statement] : cache_) statement->ForgetPrepared();
  return Exec("SET lock_timeout = " + std::to_string(lock_timeout_ms_) +
              "; SET client_min_messages = warning" +
              std::string(read_only_ ? "; SET default_transaction_read_only = on" : ""));
}

Result<Statement*> PgDb::Prepare(const std::string& sql) {
  if (!in_write_) BATON_RETURN_IF_ERROR(Reconnect());
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    it = cache_.emplace(sql, std::make_unique<PgStatement>(conn_, sql)).first;
  }
  it->second->Reset();
  return it->second.get();
}

Result<int64_t> PgDb::LastInsertId() {
  BATON_ASSIGN_OR_RETURN(Statement * s, Prepare("SELECT lastval()"));
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  if (!row) return Status::Internal("postgresql: lastval() gave no row");
  return s->Int(0);
}

bool PgDb::InTransaction() const {
  const PGTransactionStatusType t = PQtransactionStatus(conn_);
  return in_write_ || t == PQTRANS_INTRANS || t == PQTRANS_INERROR;
}

Status PgDb::SetBusyTimeout(int ms) {
  lock_timeout_ms_ = ms;
  return Exec("SET lock_timeout = " + std::to_string(ms));
}

Status PgDb::SetQueryOnly() {
  read_only_ = true;
  return Exec("SET default_transaction_read_only = on");
}

Status PgDb::BeginWrite() {
  return BeginLocked("SELECT pg_advisory_xact_lock(" + std::to_string(kPgWriteLockKey) + ")");
}

Status PgDb::BeginRunWrite(int64_t run_id) {
  // The store's key shared (any number of run writers; a BeginWrite writer or a migration holds
  // it alone), then the run's own key alone: one writer per run, in a fixed order (no deadlock).
  return BeginLocked("SELECT pg_advisory_xact_lock_shared(" + std::to_string(kPgWriteLockKey) +
                     "); SELECT pg_advisory_xact_lock(" + std::to_string(kPgRunLockClass) + ", " +
                     std::to_string(run_id % 2147483647) + ")");
}

Status PgDb::BeginLocked(const std::string& lock) {
  BATON_RETURN_IF_ERROR(Reconnect());
  Status st = Exec("BEGIN; " + lock);
  if (!st.ok()) {
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) (void)Exec("ROLLBACK");
    return st;
  }
  in_write_ = true;
  return Status::Ok();
}

}  // namespace baton
