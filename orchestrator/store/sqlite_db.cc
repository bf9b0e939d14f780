#include "orchestrator/store/sqlite_db.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

namespace baton {

namespace {

// SQLITE_BUSY after the busy timeout means another writer held the lock too long: the database
// is there but not available now. Everything else is an I/O or internal problem.
Status FromSqlite(sqlite3* db, int rc, const std::string& what) {
  const std::string msg = what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(msg + " (the database is locked by another baton process)");
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return Status::Io(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Data(msg);
    default:
      return Status::Internal(msg);
  }
}

}  // namespace

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

Statement& SqliteStatement::Bind(int i, int64_t v) {
  const int rc = sqlite3_bind_int64(stmt_, i, v);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Statement& SqliteStatement::Bind(int i, double v) {
  if (std::isnan(v)) return BindNull(i);
  const int rc = sqlite3_bind_double(stmt_, i, v);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Statement& SqliteStatement::Bind(int i, const std::string& v) {
  const int rc =
      sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Statement& SqliteStatement::BindBlob(int i, const std::string& bytes) {
  const int rc =
      sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

const void* SqliteStatement::BlobData(int col) const { return sqlite3_column_blob(stmt_, col); }
size_t SqliteStatement::BlobSize(int col) const {
  return static_cast<size_t>(sqlite3_column_bytes(stmt_, col));
}

Statement& SqliteStatement::BindNull(int i) {
  const int rc = sqlite3_bind_null(stmt_, i);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Status SqliteStatement::Error(int rc) const {
  return FromSqlite(db_, rc, std::string("sqlite: ") + sqlite3_sql(stmt_));
}

Result<bool> SqliteStatement::Step() {
  if (bind_error_ != SQLITE_OK) return Error(bind_error_);
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Error(rc);
}

bool SqliteStatement::IsNull(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}
int64_t SqliteStatement::Int(int col) const { return sqlite3_column_int64(stmt_, col); }
double SqliteStatement::Double(int col) const {
  return IsNull(col) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(stmt_, col);
}
std::string SqliteStatement::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
           : std::string();
}

void SqliteStatement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_ = SQLITE_OK;
}

SqliteDb::~SqliteDb() {
  cache_.clear();  // finalize every statement before closing
  sqlite3_close(db_);
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, int busy_timeout_ms) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status st = FromSqlite(raw, rc, path + ": cannot open the database");
    sqlite3_close(raw);
    return st;
  }
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path));
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  sqlite3_extended_result_codes(raw, 1);
  // WAL: readers (the web UI, `baton ls`) never block the writer (`baton watch`) and vice versa.
  // synchronous=NORMAL is durable across process crashes in WAL mode, which is what we need.
  BATON_RETURN_IF_ERROR(db->SetWalMode(busy_timeout_ms));
  BATON_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous = NORMAL"));
  BATON_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys = ON"));
  // The WAL pragma wrote the header: the file is there now, and this is the one we hold open.
  struct stat st {};
  if (path != ":memory:" && ::stat(path.c_str(), &st) == 0) {
    db->identity_ = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  }
  return db;
}

Status SqliteDb::SetWalMode(int busy_timeout_ms) {
  // Two processes opening a new database at once (a first `baton watch` and a `baton submit`)
  // both switch it to WAL; the loser is answered BUSY at once, without the busy handler, so it
  // waits here instead, within the same timeout.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(busy_timeout_ms, 0));
  while (true) {
    Status st = Exec("PRAGMA journal_mode = WAL");
    if (st.ok() || st.code() != Code::kUnavailable ||
        std::chrono::steady_clock::now() >= deadline) {
      return st;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status SqliteDb::CheckStillAtPath() const {
  if (!identity_) return Status::Ok();
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return Status::Io(path_ +
                        " was deleted while this process had it open: what it writes "
                        "now goes to a file no other process can see");
    }
    return Status::Io(path_ + ": cannot stat the open database: " + std::strerror(err));
  }
  if (static_cast<uint64_t>(st.st_dev) != identity_->first ||
      static_cast<uint64_t>(st.st_ino) != identity_->second) {
    return Status::Io(path_ +
                      " was replaced by another file while this process had it open: "
                      "what it writes now goes to the old, unlinked one");
  }
  return Status::Ok();
}

void SqliteDb::ReleaseReadSnapshot() {
  for (sqlite3_stmt* s = sqlite3_next_stmt(db_, nullptr); s != nullptr;
       s = sqlite3_next_stmt(db_, s)) {
    sqlite3_reset(s);
  }
}

Status SqliteDb::BeginWrite() {
  // A statement left mid-result keeps its read snapshot into the transaction; if another process
  // committed since, SQLite refuses the write lock at once (SQLITE_BUSY_SNAPSHOT), without the
  // busy handler, where a fresh snapshot would simply have waited for the lock.
  ReleaseReadSnapshot();
  return Exec("BEGIN IMMEDIATE");
}

Status SqliteDb::Exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string what = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    Status st = FromSqlite(nullptr, rc, path_ + ": " + what);
    return st;
  }
  return Status::Ok();
}

Result<Statement*> SqliteDb::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return FromSqlite(db_, rc, "sqlite: cannot prepare: " + sql);
    it = cache_.emplace(sql, std::make_unique<SqliteStatement>(db_, stmt)).first;
  }
  // One statement in use at a time (see the header): rewinding the others ends their implicit
  // read transactions, so a single-row read never pins an old snapshot (or the WAL) afterwards.
  for (auto& [text, stmt] : cache_) stmt->Reset();
  return it->second.get();
}

}  // namespace baton
