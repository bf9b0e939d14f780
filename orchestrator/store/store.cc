#include "orchestrator/store/store.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "orchestrator/embedded/embedded_files.h"
#include "orchestrator/store/record_columns.h"
#include "orchestrator/store/shared_fs.h"
#include "orchestrator/store/sql_dialect.h"
#include "orchestrator/store/store_check.h"
#include "orchestrator/store/store_spec.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

// The leading number of "NNN_name.sql"; -1 when there is none.
int64_t MigrationNumber(const std::string& name) {
  size_t i = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  if (i == 0 || i >= name.size() || name[i] != '_') return -1;
  return std::stoll(name.substr(0, i));
}

}  // namespace

bool IsTerminal(RunStatus status) {
  return status == RunStatus::kCompleted || status == RunStatus::kFailed ||
         status == RunStatus::kCancelled;
}

std::string BatonHome() {
  const char* home = std::getenv("BATON_HOME");
  if (home != nullptr && *home != '\0') return home;
  const char* user_home = std::getenv("HOME");
  return std::string(user_home != nullptr && *user_home != '\0' ? user_home : ".") + "/.baton";
}

std::string DefaultDbPath() {
  const char* store = std::getenv("BATON_STORE");
  if (store != nullptr && *store != '\0') return store;
  return BatonHome() + "/baton.db";
}

int64_t Store::LatestSchemaVersion() {
  int64_t latest = 0;
  for (const EmbeddedFile& f : SqlMigrations()) latest = std::max(latest, MigrationNumber(f.name));
  return latest;
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  BATON_ASSIGN_OR_RETURN(const StoreSpec spec, ParseStoreSpec(path));
  if (spec.backend == Backend::kSqlite && spec.target != ":memory:") {
    std::error_code ec;
    const fs::path parent = fs::path(spec.target).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) return Status::Io(parent.string() + ": cannot create the baton home: " + ec.message());
    BATON_RETURN_IF_ERROR(
        CheckSqliteStoreFilesystem(spec.target));  // NFS, Lustre, FUSE...: exit 78
  }
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb(spec, kBusyTimeoutMs));
  std::unique_ptr<Store> store(new Store(std::move(db)));
  Store* raw = store.get();
  raw->db_->SetTransactionHooks([raw] { return raw->rollups_->Flush(*raw->db_); },
                                [raw] { raw->rollups_->Forget(); });
  Status st = store->Migrate();
  if (!st.ok()) return st.Annotate(raw->db_->path());
  return store;
}

Result<int64_t> Store::SchemaVersion() { return ReadSchemaVersion(*db_); }

Status Store::Migrate() {
  // Each migration and its user_version bump commit together, so a crash leaves the database at
  // a whole version. BEGIN IMMEDIATE also serialises two processes migrating at once; the loser
  // re-reads user_version inside its transaction and finds nothing left to do. A database that
  // is already current takes no write lock at all, so opening a connection never waits for a
  // running ingestion.
  BATON_ASSIGN_OR_RETURN(const int64_t current, SchemaVersion());
  const bool up_to_date = current >= LatestSchemaVersion();
  for (const EmbeddedFile& f : up_to_date ? std::vector<EmbeddedFile>{} : SqlMigrations()) {
    const int64_t number = MigrationNumber(f.name);
    if (number < 0) return Status::Internal(std::string("migration without a number: ") + f.name);
    // A migration that rebuilds a table others reference runs with foreign keys off (a DROP
    // would cascade), and is checked before it commits. The pragma is a no-op inside a
    // transaction, so it is set around it.
    const bool fk_off = MigrationRunsWithForeignKeysOff(f.text);
    const bool sqlite_fk_off = fk_off && db_->backend() == Backend::kSqlite;
    if (sqlite_fk_off) BATON_RETURN_IF_ERROR(db_->Exec("PRAGMA foreign_keys = OFF"));
    Status st = ApplyMigration(f, number, fk_off);
    if (sqlite_fk_off) {
      Status on = db_->Exec("PRAGMA foreign_keys = ON");
      if (st.ok() && !on.ok()) st = on;
    }
    BATON_RETURN_IF_ERROR(st);
  }
  BATON_ASSIGN_OR_RETURN(const int64_t version, SchemaVersion());
  if (version > LatestSchemaVersion()) {
    return Status::Data("database schema version " + std::to_string(version) +
                        " is newer than this baton understands (" +
                        std::to_string(LatestSchemaVersion()) + "); upgrade baton");
  }
  return Status::Ok();
}

Status Store::ApplyMigration(const EmbeddedFile& f, int64_t number, bool check_foreign_keys) {
  BATON_ASSIGN_OR_RETURN(Transaction tx, Begin());
  BATON_ASSIGN_OR_RETURN(const int64_t version, SchemaVersion());
  if (version >= number) return Status::Ok();  // tx rolls back (nothing written)
  if (version != number - 1) {
    return Status::Internal("migrations out of order at " + std::string(f.name));
  }
  const Backend backend = db_->backend();
  std::vector<std::string> foreign_keys;  // PostgreSQL: re-added after a rebuild
  if (backend == Backend::kPostgres && check_foreign_keys) {
    BATON_ASSIGN_OR_RETURN(foreign_keys, PgForeignKeysInto(*db_, DroppedTables(f.text)));
  }
  Status st = db_->Exec(MigrationText(backend, f.text));
  if (st.ok() && backend == Backend::kPostgres) st = PgAfterMigration(*db_, foreign_keys);
  if (!st.ok()) return st.Annotate(std::string("migration ") + f.name);
  if (check_foreign_keys && backend == Backend::kSqlite) {
    BATON_ASSIGN_OR_RETURN(Statement * check, db_->Prepare("PRAGMA foreign_key_check"));
    BATON_ASSIGN_OR_RETURN(const bool broken, check->Step());
    if (broken) {
      // Rows that already dangled before the migration (foreign keys were off when their parent
      // went): named, and the way out said, rather than a bare internal error on every command.
      const std::string table = check->Text(0);
      check->Reset();
      BATON_ASSIGN_OR_RETURN(const std::vector<DanglingReference> dangling, FindDanglingRows(*db_));
      const std::string rows =
          dangling.empty() ? "rows of table " + table : DanglingRowsText(dangling, /*max=*/5);
      return Status::Data(std::string("migration ") + f.name +
                          " stopped: rows point at rows that are not there (" + rows +
                          "); the database stays at version " + std::to_string(number - 1) +
                          ". `baton store check` lists them, `baton store check --repair` "
                          "deletes them");
    }
  }
  // PRAGMA takes no bound parameters; `number` is parsed from our own embedded file name.
  BATON_RETURN_IF_ERROR(db_->Exec(SetSchemaVersionSql(backend, number)));
  return tx.Commit();
}

Status Store::Write(const std::function<Status()>& body) {
  BATON_ASSIGN_OR_RETURN(Transaction tx, Begin());
  BATON_RETURN_IF_ERROR(body());
  return tx.Commit();
}

Status Store::WriteForRun(int64_t run_id, const std::function<Status()>& body) {
  BATON_ASSIGN_OR_RETURN(Transaction tx, BeginForRun(run_id));
  BATON_RETURN_IF_ERROR(body());
  return tx.Commit();
}

// -------------------------------------------------------------------------- ingest cursors

Result<int64_t> Store::CursorInTx(const std::string& path) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db_->Prepare("SELECT \"offset\" FROM ingest_cursors WHERE path = ?1"));
  s->Bind(1, path);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  return row ? s->Int(0) : 0;
}

Status Store::SetCursorInTx(const std::string& path, int64_t run_id, int64_t offset,
                            int64_t bad_lines_added, double now) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare("INSERT INTO ingest_cursors (path, run_id, \"offset\", bad_lines, updated_at) "
                   "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (path) DO UPDATE SET "
                   "\"offset\" = excluded.\"offset\", "
                   "bad_lines = ingest_cursors.bad_lines + excluded.bad_lines, "
                   "updated_at = excluded.updated_at"));
  return s->Bind(1, path)
      .Bind(2, run_id)
      .Bind(3, offset)
      .Bind(4, bad_lines_added)
      .Bind(5, now)
      .Run();
}

}  // namespace baton
