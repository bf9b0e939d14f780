#include "orchestrator/store/store.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "orchestrator/embedded/embedded_files.h"
#include "orchestrator/store/record_columns.h"

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

// First line of a migration that must run with foreign keys off (it rebuilds a table).
constexpr const char* kForeignKeysOffMarker = "-- baton-migration: foreign_keys=off";

}  // namespace

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kPending:
      return "PENDING";
    case RunStatus::kRunning:
      return "RUNNING";
    case RunStatus::kRequeued:
      return "REQUEUED";
    case RunStatus::kCompleted:
      return "COMPLETED";
    case RunStatus::kFailed:
      return "FAILED";
    case RunStatus::kCancelled:
      return "CANCELLED";
  }
  return "FAILED";
}

std::optional<RunStatus> ParseRunStatus(const std::string& name) {
  for (RunStatus s : {RunStatus::kPending, RunStatus::kRunning, RunStatus::kRequeued,
                      RunStatus::kCompleted, RunStatus::kFailed, RunStatus::kCancelled}) {
    if (name == RunStatusName(s)) return s;
  }
  return std::nullopt;
}

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

std::string DefaultDbPath() { return BatonHome() + "/baton.db"; }

int64_t Store::LatestSchemaVersion() {
  int64_t latest = 0;
  for (const EmbeddedFile& f : SqlMigrations()) latest = std::max(latest, MigrationNumber(f.name));
  return latest;
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  if (path != ":memory:") {
    std::error_code ec;
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) return Status::Io(parent.string() + ": cannot create the baton home: " + ec.message());
  }
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path, kBusyTimeoutMs));
  std::unique_ptr<Store> store(new Store(std::move(db)));
  Store* raw = store.get();
  raw->db_->SetTransactionHooks([raw] { return raw->rollups_->Flush(*raw->db_); },
                                [raw] { raw->rollups_->Forget(); });
  Status st = store->Migrate();
  if (!st.ok()) return st.Annotate(path);
  return store;
}

Result<int64_t> Store::SchemaVersion() {
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare("PRAGMA user_version"));
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const int64_t version = row ? s->Int(0) : 0;
  // Not left mid-result: an active statement makes a migration's DROP TABLE fail as locked.
  s->Reset();
  return version;
}

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
    const bool fk_off = std::string(f.text).rfind(kForeignKeysOffMarker, 0) == 0;
    if (fk_off) BATON_RETURN_IF_ERROR(db_->Exec("PRAGMA foreign_keys = OFF"));
    Status st = ApplyMigration(f, number, fk_off);
    if (fk_off) {
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
  Status st = db_->Exec(f.text);
  if (!st.ok()) return st.Annotate(std::string("migration ") + f.name);
  if (check_foreign_keys) {
    BATON_ASSIGN_OR_RETURN(Statement * check, db_->Prepare("PRAGMA foreign_key_check"));
    BATON_ASSIGN_OR_RETURN(const bool broken, check->Step());
    if (broken) {
      const std::string table = check->Text(0);
      check->Reset();
      return Status::Internal(std::string("migration ") + f.name +
                              " left a broken foreign key in table " + table);
    }
  }
  // PRAGMA takes no bound parameters; `number` is parsed from our own embedded file name.
  BATON_RETURN_IF_ERROR(db_->Exec("PRAGMA user_version = " + std::to_string(number)));
  return tx.Commit();
}

Status Store::Write(const std::function<Status()>& body) {
  BATON_ASSIGN_OR_RETURN(Transaction tx, Begin());
  BATON_RETURN_IF_ERROR(body());
  return tx.Commit();
}

// ------------------------------------------------------------------------------------ runs

Result<int64_t> Store::CreateRunInTx(const NewRun& run, double now) {
  RunRecord r;
  r.name = run.name;
  r.status = RunStatus::kPending;
  r.config = run.config;
  r.config_source = run.config_source;
  r.run_dir = run.run_dir;
  r.target_steps = run.target_steps;
  r.max_restarts = run.max_restarts;
  r.max_failures = run.max_failures;
  r.partition = run.partition;
  r.created_at = now;
  r.updated_at = now;
  static const TableStatement kInsert = RunTable().Insert("INSERT");
  BATON_RETURN_IF_ERROR(RunTable().Write(*db_, kInsert, r));
  return db_->LastInsertId();
}

Status Store::SetRunDirInTx(int64_t run_id, const std::string& run_dir, const std::string& config) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db_->Prepare("UPDATE runs SET run_dir = ?2, config = ?3 WHERE id = ?1"));
  return s->Bind(1, run_id).Bind(2, run_dir).Bind(3, config).Run();
}

Status Store::SetRunJobInTx(int64_t run_id, const std::string& job_id, double now) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s, db_->Prepare("UPDATE runs SET job_id = ?2, updated_at = ?3 WHERE id = ?1"));
  return s->Bind(1, run_id).Bind(2, job_id).Bind(3, now).Run();
}

Status Store::SetRunLimitsInTx(int64_t run_id, int64_t max_restarts, int64_t max_failures) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare("UPDATE runs SET max_restarts = ?2, max_failures = ?3 WHERE id = ?1"));
  return s->Bind(1, run_id).Bind(2, max_restarts).Bind(3, max_failures).Run();
}

Status Store::SetRunStatusInTx(int64_t run_id, RunStatus status, const std::string& reason,
                               double now) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare("UPDATE runs SET status = ?2, reason = ?3, updated_at = ?4 WHERE id = ?1"));
  return s->Bind(1, run_id).Bind(2, RunStatusName(status)).Bind(3, reason).Bind(4, now).Run();
}

Status Store::SetActiveRunStatusInTx(int64_t run_id, RunStatus status, const std::string& reason,
                                     double now) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db_->Prepare("UPDATE runs SET status = ?2, reason = ?3, updated_at = ?4 "
                                      "WHERE id = ?1 "
                                      "AND status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED') "
                                      "AND (status <> ?2 OR reason <> ?3)"));
  return s->Bind(1, run_id).Bind(2, RunStatusName(status)).Bind(3, reason).Bind(4, now).Run();
}

Result<RunRecord> Store::GetRun(int64_t run_id) {
  static const std::string kSql = RunTable().Select("WHERE id = ?1");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, run_id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  if (!row) return Status::NotFound("no run with id " + std::to_string(run_id));
  return RunTable().Read(*s);
}

Result<RunRecord> Store::FindRun(const std::string& id_or_name) {
  if (id_or_name.empty()) return Status::NotFound("empty run name");
  const bool numeric =
      id_or_name.find_first_not_of("0123456789") == std::string::npos && id_or_name.size() < 19;
  if (numeric) {
    Result<RunRecord> r = GetRun(std::stoll(id_or_name));
    if (r.ok() || r.status().code() != Code::kNotFound) return r;
  }
  static const std::string kSql = RunTable().Select("WHERE name = ?1 ORDER BY id DESC LIMIT 1");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, id_or_name);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  if (!row) {
    return Status::NotFound("no run with id or name '" + id_or_name + "' in " + db_->path() +
                            " (see `baton ls`)");
  }
  return RunTable().Read(*s);
}

Result<std::vector<RunRecord>> Store::ListRuns(int64_t limit, int64_t offset) {
  static const std::string kSql = RunTable().Select("ORDER BY id DESC LIMIT ?1 OFFSET ?2");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, limit).Bind(2, offset);
  return RunTable().ReadAll(*s);
}

Result<std::vector<RunRecord>> Store::ListActiveRuns() {
  static const std::string kSql =
      RunTable().Select("WHERE status IN ('PENDING', 'RUNNING', 'REQUEUED') ORDER BY id");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  return RunTable().ReadAll(*s);
}

Result<std::vector<RunRecord>> Store::ListRunsEndedSince(double since) {
  static const std::string kSql = RunTable().Select(
      "WHERE status IN ('COMPLETED', 'FAILED', 'CANCELLED') AND updated_at >= ?1 ORDER BY id");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, since);
  return RunTable().ReadAll(*s);
}

// -------------------------------------------------------------------------------- attempts

Result<int64_t> Store::EnsureAttemptInTx(int64_t run_id, const std::string& job_id,
                                         int64_t restart_count, int64_t in_job_seq) {
  BATON_ASSIGN_OR_RETURN(Statement * find,
                         db_->Prepare("SELECT id FROM attempts WHERE run_id = ?1 AND job_id = ?2 "
                                      "AND restart_count = ?3 AND in_job_seq = ?4"));
  find->Bind(1, run_id).Bind(2, job_id).Bind(3, restart_count).Bind(4, in_job_seq);
  BATON_ASSIGN_OR_RETURN(const bool row, find->Step());
  if (row) return find->Int(0);
  BATON_ASSIGN_OR_RETURN(Statement * ins,
                         db_->Prepare("INSERT INTO attempts (run_id, job_id, restart_count, "
                                      "in_job_seq) VALUES (?1, ?2, ?3, ?4)"));
  BATON_RETURN_IF_ERROR(
      ins->Bind(1, run_id).Bind(2, job_id).Bind(3, restart_count).Bind(4, in_job_seq).Run());
  return db_->LastInsertId();
}

Status Store::UpdateAttemptInTx(const AttemptRecord& a) {
  static const TableStatement kUpdate = AttemptTable().Update();
  return AttemptTable().Write(*db_, kUpdate, a);
}

Result<AttemptRecord> Store::GetAttempt(int64_t attempt_id) {
  static const std::string kSql = AttemptTable().Select("WHERE id = ?1");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, attempt_id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  if (!row) return Status::NotFound("no attempt with id " + std::to_string(attempt_id));
  return AttemptTable().Read(*s);
}

Result<std::vector<AttemptRecord>> Store::ListAttempts(int64_t run_id) {
  static const std::string kSql = AttemptTable().Select("WHERE run_id = ?1 ORDER BY id");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, run_id);
  return AttemptTable().ReadAll(*s);
}

// ----------------------------------------------------------------------------------- steps

Status Store::InsertStepInTx(const StepRecord& r) {
  // Attempt ids grow in the order attempts happened (ingest reads event files in job/restart
  // order), so "earlier attempt" is "smaller attempt id".
  BATON_ASSIGN_OR_RETURN(
      Statement * older,
      db_->Prepare("UPDATE steps SET superseded = 1 "
                   "WHERE run_id = ?1 AND step = ?2 AND attempt_id < ?3 AND superseded = 0"));
  BATON_RETURN_IF_ERROR(older->Bind(1, r.run_id).Bind(2, r.step).Bind(3, r.attempt_id).Run());

  // superseded is the store's to set, never the caller's: this row is superseded already when a
  // later attempt has the step (a row ingested late).
  static const TableStatement kInsert = [] {
    const ColumnTable<StepRecord>& t = StepTable();
    return t.Insert("INSERT OR REPLACE",
                    {{"superseded", "EXISTS (SELECT 1 FROM steps WHERE run_id = " +
                                        t.Param("run_id") + " AND step = " + t.Param("step") +
                                        " AND attempt_id > " + t.Param("attempt_id") + ")"}});
  }();
  BATON_RETURN_IF_ERROR(StepTable().Write(*db_, kInsert, r));

  BATON_ASSIGN_OR_RETURN(Statement * last,
                         db_->Prepare("UPDATE attempts SET last_step = ?2 "
                                      "WHERE id = ?1 AND (last_step IS NULL OR last_step < ?2)"));
  // last_step counts finished steps (segment_end's "step"); step row k means k + 1 are done.
  BATON_RETURN_IF_ERROR(last->Bind(1, r.attempt_id).Bind(2, r.step + 1).Run());
  rollups_->MarkDirty(r.run_id, r.step);
  return Status::Ok();
}

Result<std::vector<StepRecord>> Store::ListSteps(int64_t run_id, const StepQuery& q) {
  static const std::string kSql = StepTable().Select(
      "WHERE run_id = ?1 AND step BETWEEN ?2 AND ?3 AND (?4 OR superseded = 0) "
      "ORDER BY step, attempt_id LIMIT ?5 OFFSET ?6");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, run_id)
      .Bind(2, q.from_step)
      .Bind(3, q.to_step)
      .Bind(4, static_cast<int64_t>(q.include_superseded))
      .Bind(5, q.limit)
      .Bind(6, q.offset);
  return StepTable().ReadAll(*s);
}

Result<int64_t> Store::CountSteps(int64_t run_id, bool include_superseded) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare("SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND (?2 OR superseded = 0)"));
  s->Bind(1, run_id).Bind(2, static_cast<int64_t>(include_superseded));
  BATON_RETURN_IF_ERROR(s->Step().status());
  return s->Int(0);
}

Result<NonfiniteCounts> Store::CountNonfiniteSteps(int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare("SELECT COALESCE(SUM(superseded = 0), 0), COALESCE(SUM(superseded = 1), 0) "
                   "FROM steps INDEXED BY steps_nonfinite WHERE run_id = ?1 AND nonfinite = 1"));
  s->Bind(1, run_id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  NonfiniteCounts c;
  if (row) {
    c.effective = s->Int(0);
    c.superseded = s->Int(1);
  }
  return c;
}

Result<std::vector<StepRecord>> Store::ListNonfiniteSteps(int64_t run_id, bool include_superseded,
                                                          int64_t limit) {
  // The partial index, always: ORDER BY step would otherwise tempt the planner into walking
  // every row of the run through steps_run_step (a long run with no skipped step: 1 M rows).
  static const std::string kSql = StepTable().Select(
      "INDEXED BY steps_nonfinite WHERE run_id = ?1 AND nonfinite = 1 AND (?2 OR superseded = 0) "
      "ORDER BY step, attempt_id LIMIT ?3");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, run_id).Bind(2, static_cast<int64_t>(include_superseded)).Bind(3, limit);
  return StepTable().ReadAll(*s);
}

Status Store::InsertMicrostepInTx(const MicrostepRecord& m) {
  static const TableStatement kInsert = MicrostepTable().Insert("INSERT OR REPLACE");
  return MicrostepTable().Write(*db_, kInsert, m);
}

Result<std::vector<MicrostepRecord>> Store::ListMicrosteps(int64_t run_id) {
  static const std::string kSql =
      MicrostepTable().Select("WHERE run_id = ?1 ORDER BY attempt_id, step, micro");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, run_id);
  return MicrostepTable().ReadAll(*s);
}

// ----------------------------------------------------------------------------- checkpoints

Status Store::UpsertCheckpointInTx(const CheckpointRecord& c) {
  static const TableStatement kInsert = CheckpointTable().Insert("INSERT OR REPLACE");
  return CheckpointTable().Write(*db_, kInsert, c);
}

Result<std::vector<CheckpointRecord>> Store::ListCheckpoints(int64_t run_id) {
  static const std::string kSql = CheckpointTable().Select("WHERE run_id = ?1 ORDER BY step DESC");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, run_id);
  return CheckpointTable().ReadAll(*s);
}

// ------------------------------------------------------- stop-save budgets and write probes

Status Store::UpsertStopSaveBudgetInTx(const StopSaveBudgetRecord& b) {
  static const TableStatement kInsert = StopSaveBudgetTable().Insert("INSERT OR REPLACE");
  return StopSaveBudgetTable().Write(*db_, kInsert, b);
}

Result<std::optional<StopSaveBudgetRecord>> Store::GetStopSaveBudget(int64_t run_id) {
  static const std::string kSql = StopSaveBudgetTable().Select("WHERE run_id = ?1");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, run_id);
  BATON_ASSIGN_OR_RETURN(std::vector<StopSaveBudgetRecord> rows, StopSaveBudgetTable().ReadAll(*s));
  if (rows.empty()) return std::optional<StopSaveBudgetRecord>();
  return std::optional<StopSaveBudgetRecord>(rows.front());
}

Status Store::PutWriteProbe(const WriteProbeRecord& p) {
  static const TableStatement kInsert = WriteProbeTable().Insert("INSERT OR REPLACE");
  return Write([&] { return WriteProbeTable().Write(*db_, kInsert, p); });
}

Result<std::optional<WriteProbeRecord>> Store::GetWriteProbe(const std::string& folder) {
  static const std::string kSql = WriteProbeTable().Select("WHERE folder = ?1");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, folder);
  BATON_ASSIGN_OR_RETURN(std::vector<WriteProbeRecord> rows, WriteProbeTable().ReadAll(*s));
  if (rows.empty()) return std::optional<WriteProbeRecord>();
  return std::optional<WriteProbeRecord>(rows.front());
}

// -------------------------------------------------------------------------- ingest cursors

Result<int64_t> Store::CursorInTx(const std::string& path) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db_->Prepare("SELECT offset FROM ingest_cursors WHERE path = ?1"));
  s->Bind(1, path);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  return row ? s->Int(0) : 0;
}

Status Store::SetCursorInTx(const std::string& path, int64_t run_id, int64_t offset,
                            int64_t bad_lines_added, double now) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare("INSERT INTO ingest_cursors (path, run_id, offset, bad_lines, updated_at) "
                   "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (path) DO UPDATE SET "
                   "offset = excluded.offset, bad_lines = bad_lines + excluded.bad_lines, "
                   "updated_at = excluded.updated_at"));
  return s->Bind(1, path)
      .Bind(2, run_id)
      .Bind(3, offset)
      .Bind(4, bad_lines_added)
      .Bind(5, now)
      .Run();
}

}  // namespace baton
