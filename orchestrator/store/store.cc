#include "orchestrator/store/store.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "orchestrator/embedded/embedded_files.h"

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

constexpr const char* kRunColumns =
    "id, name, status, reason, config, config_source, run_dir, target_steps, max_restarts, "
    "max_failures, job_id, created_at, updated_at";

RunRecord ReadRun(const Statement& s) {
  RunRecord r;
  r.id = s.Int(0);
  r.name = s.Text(1);
  r.status = ParseRunStatus(s.Text(2)).value_or(RunStatus::kFailed);
  r.reason = s.Text(3);
  r.config = s.Text(4);
  r.config_source = s.Text(5);
  r.run_dir = s.Text(6);
  r.target_steps = s.Int(7);
  r.max_restarts = s.Int(8);
  r.max_failures = s.Int(9);
  r.job_id = s.Text(10);
  r.created_at = s.Double(11);
  r.updated_at = s.Double(12);
  return r;
}

constexpr const char* kAttemptColumns =
    "id, run_id, job_id, restart_count, nodes, started_at, ended_at, slurm_state, exit_code, "
    "action, end_reason, trainer_end_reason, resume_mode, checkpoint, step0, last_step, "
    "resume_warmup_steps, warmup_until, world_size, config_hash, trainer_message, "
    "trainer_exit_code";

AttemptRecord ReadAttempt(const Statement& s) {
  AttemptRecord a;
  a.id = s.Int(0);
  a.run_id = s.Int(1);
  a.job_id = s.Text(2);
  a.restart_count = s.Int(3);
  a.nodes = s.Text(4);
  a.started_at = s.OptDouble(5);
  a.ended_at = s.OptDouble(6);
  a.slurm_state = s.Text(7);
  a.exit_code = s.OptInt(8);
  a.action = s.Text(9);
  a.end_reason = s.Text(10);
  a.trainer_end_reason = s.Text(11);
  a.resume_mode = s.Text(12);
  a.checkpoint = s.Text(13);
  a.step0 = s.OptInt(14);
  a.last_step = s.OptInt(15);
  a.resume_warmup_steps = s.Int(16);
  a.warmup_until = s.OptInt(17);
  a.world_size = s.OptInt(18);
  a.config_hash = s.Text(19);
  a.trainer_message = s.Text(20);
  a.trainer_exit_code = s.OptInt(21);
  return a;
}

constexpr const char* kStepColumns =
    "run_id, attempt_id, step, time, lr, loss, loss_video, loss_action, grad_norm, tokens, "
    "padded_tokens, samples, valid_frames, padded_frames, step_time_s, tokens_per_s, in_warmup, "
    "epoch, superseded, nonfinite, nonfinite_episodes";

// steps.nonfinite_episodes holds a JSON array of strings; NULL when there are none. Encoding
// replaces invalid UTF-8 rather than failing: an id is only ever shown, never looked up.
std::optional<std::string> EncodeEpisodes(const std::vector<std::string>& ids) {
  if (ids.empty()) return std::nullopt;
  return nlohmann::json(ids).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The inverse; anything that is not an array of strings reads as no ids (never an error: one
// odd row must not hide a run's history).
std::vector<std::string> DecodeEpisodes(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return out;
  for (const nlohmann::json& id : j) {
    if (id.is_string()) out.push_back(id.get<std::string>());
  }
  return out;
}

StepRecord ReadStep(const Statement& s) {
  StepRecord r;
  r.run_id = s.Int(0);
  r.attempt_id = s.Int(1);
  r.step = s.Int(2);
  r.time = s.Double(3);
  r.lr = s.Double(4);
  r.loss = s.Double(5);
  r.loss_video = s.Double(6);
  r.loss_action = s.Double(7);
  r.grad_norm = s.Double(8);
  r.tokens = s.Int(9);
  r.padded_tokens = s.Int(10);
  r.samples = s.Int(11);
  r.valid_frames = s.Int(12);
  r.padded_frames = s.Int(13);
  r.step_time_s = s.Double(14);
  r.tokens_per_s = s.Double(15);
  r.in_warmup = s.Int(16) != 0;
  r.epoch = s.Int(17);
  r.superseded = s.Int(18) != 0;
  r.nonfinite = s.Int(19) != 0;
  r.nonfinite_episodes = DecodeEpisodes(s.Text(20));
  return r;
}

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
  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, kBusyTimeoutMs);
  if (!db.ok()) return db.status();
  std::unique_ptr<Store> store(new Store(std::move(db).value()));
  Status st = store->Migrate();
  if (!st.ok()) return st.Annotate(path);
  return store;
}

Result<int64_t> Store::SchemaVersion() {
  Result<Statement*> s = db_->Prepare("PRAGMA user_version");
  if (!s.ok()) return s.status();
  Result<bool> row = (*s)->Step();
  if (!row.ok()) return row.status();
  return *row ? (*s)->Int(0) : 0;
}

Status Store::Migrate() {
  // Each migration and its user_version bump commit together, so a crash leaves the database at
  // a whole version. BEGIN IMMEDIATE also serialises two processes migrating at once; the loser
  // re-reads user_version inside its transaction and finds nothing left to do. A database that
  // is already current takes no write lock at all, so opening a connection never waits for a
  // running ingestion.
  Result<int64_t> current = SchemaVersion();
  if (!current.ok()) return current.status();
  const bool up_to_date = *current >= LatestSchemaVersion();
  for (const EmbeddedFile& f : up_to_date ? std::vector<EmbeddedFile>{} : SqlMigrations()) {
    const int64_t number = MigrationNumber(f.name);
    if (number < 0) return Status::Internal(std::string("migration without a number: ") + f.name);
    Result<Transaction> tx = Begin();
    if (!tx.ok()) return tx.status();
    Result<int64_t> version = SchemaVersion();
    if (!version.ok()) return version.status();
    if (*version >= number) continue;  // tx rolls back (nothing written)
    if (*version != number - 1) {
      return Status::Internal("migrations out of order at " + std::string(f.name));
    }
    Status st = db_->Exec(f.text);
    if (!st.ok()) return st.Annotate(std::string("migration ") + f.name);
    // PRAGMA takes no bound parameters; `number` is parsed from our own embedded file name.
    BATON_RETURN_IF_ERROR(db_->Exec("PRAGMA user_version = " + std::to_string(number)));
    BATON_RETURN_IF_ERROR(tx->Commit());
  }
  Result<int64_t> version = SchemaVersion();
  if (!version.ok()) return version.status();
  if (*version > LatestSchemaVersion()) {
    return Status::Data("database schema version " + std::to_string(*version) +
                        " is newer than this baton understands (" +
                        std::to_string(LatestSchemaVersion()) + "); upgrade baton");
  }
  return Status::Ok();
}

Status Store::Write(const std::function<Status()>& body) {
  Result<Transaction> tx = Begin();
  if (!tx.ok()) return tx.status();
  BATON_RETURN_IF_ERROR(body());
  return tx->Commit();
}

// ------------------------------------------------------------------------------------ runs

Result<int64_t> Store::CreateRunInTx(const NewRun& run, double now) {
  Result<Statement*> s = db_->Prepare(
      "INSERT INTO runs (name, status, config, config_source, run_dir, target_steps, "
      "max_restarts, max_failures, created_at, updated_at) "
      "VALUES (?1, 'PENDING', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, run.name)
      .Bind(2, run.config)
      .Bind(3, run.config_source)
      .Bind(4, run.run_dir)
      .Bind(5, run.target_steps)
      .Bind(6, run.max_restarts)
      .Bind(7, run.max_failures)
      .Bind(8, now);
  BATON_RETURN_IF_ERROR((*s)->Run());
  return db_->LastInsertId();
}

Status Store::SetRunDirInTx(int64_t run_id, const std::string& run_dir, const std::string& config) {
  Result<Statement*> s = db_->Prepare("UPDATE runs SET run_dir = ?2, config = ?3 WHERE id = ?1");
  if (!s.ok()) return s.status();
  return (*s)->Bind(1, run_id).Bind(2, run_dir).Bind(3, config).Run();
}

Status Store::SetRunJobInTx(int64_t run_id, const std::string& job_id, double now) {
  Result<Statement*> s = db_->Prepare("UPDATE runs SET job_id = ?2, updated_at = ?3 WHERE id = ?1");
  if (!s.ok()) return s.status();
  return (*s)->Bind(1, run_id).Bind(2, job_id).Bind(3, now).Run();
}

Status Store::SetRunStatusInTx(int64_t run_id, RunStatus status, const std::string& reason,
                               double now) {
  Result<Statement*> s =
      db_->Prepare("UPDATE runs SET status = ?2, reason = ?3, updated_at = ?4 WHERE id = ?1");
  if (!s.ok()) return s.status();
  return (*s)->Bind(1, run_id).Bind(2, RunStatusName(status)).Bind(3, reason).Bind(4, now).Run();
}

Status Store::SetActiveRunStatusInTx(int64_t run_id, RunStatus status, const std::string& reason,
                                     double now) {
  Result<Statement*> s = db_->Prepare(
      "UPDATE runs SET status = ?2, reason = ?3, updated_at = ?4 WHERE id = ?1 "
      "AND status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED') "
      "AND (status <> ?2 OR reason <> ?3)");
  if (!s.ok()) return s.status();
  return (*s)->Bind(1, run_id).Bind(2, RunStatusName(status)).Bind(3, reason).Bind(4, now).Run();
}

Result<RunRecord> Store::GetRun(int64_t run_id) {
  Result<Statement*> s =
      db_->Prepare(std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, run_id);
  Result<bool> row = (*s)->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound("no run with id " + std::to_string(run_id));
  return ReadRun(**s);
}

Result<RunRecord> Store::FindRun(const std::string& id_or_name) {
  if (id_or_name.empty()) return Status::NotFound("empty run name");
  const bool numeric =
      id_or_name.find_first_not_of("0123456789") == std::string::npos && id_or_name.size() < 19;
  if (numeric) {
    Result<RunRecord> r = GetRun(std::stoll(id_or_name));
    if (r.ok() || r.status().code() != Code::kNotFound) return r;
  }
  Result<Statement*> s = db_->Prepare(std::string("SELECT ") + kRunColumns +
                                      " FROM runs WHERE name = ?1 ORDER BY id DESC LIMIT 1");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, id_or_name);
  Result<bool> row = (*s)->Step();
  if (!row.ok()) return row.status();
  if (!*row) {
    return Status::NotFound("no run with id or name '" + id_or_name + "' in " + db_->path() +
                            " (see `baton ls`)");
  }
  return ReadRun(**s);
}

Result<std::vector<RunRecord>> Store::ListRuns(int64_t limit, int64_t offset) {
  Result<Statement*> s = db_->Prepare(std::string("SELECT ") + kRunColumns +
                                      " FROM runs ORDER BY id DESC LIMIT ?1 OFFSET ?2");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, limit).Bind(2, offset);
  return (*s)->Collect<RunRecord>(ReadRun);
}

Result<std::vector<RunRecord>> Store::ListActiveRuns() {
  Result<Statement*> s =
      db_->Prepare(std::string("SELECT ") + kRunColumns +
                   " FROM runs WHERE status IN ('PENDING', 'RUNNING', 'REQUEUED') ORDER BY id");
  if (!s.ok()) return s.status();
  return (*s)->Collect<RunRecord>(ReadRun);
}

// -------------------------------------------------------------------------------- attempts

Result<int64_t> Store::EnsureAttemptInTx(int64_t run_id, const std::string& job_id,
                                         int64_t restart_count) {
  Result<Statement*> find = db_->Prepare(
      "SELECT id FROM attempts WHERE run_id = ?1 AND job_id = ?2 AND restart_count = ?3");
  if (!find.ok()) return find.status();
  (*find)->Bind(1, run_id).Bind(2, job_id).Bind(3, restart_count);
  Result<bool> row = (*find)->Step();
  if (!row.ok()) return row.status();
  if (*row) return (*find)->Int(0);
  Result<Statement*> ins =
      db_->Prepare("INSERT INTO attempts (run_id, job_id, restart_count) VALUES (?1, ?2, ?3)");
  if (!ins.ok()) return ins.status();
  BATON_RETURN_IF_ERROR((*ins)->Bind(1, run_id).Bind(2, job_id).Bind(3, restart_count).Run());
  return db_->LastInsertId();
}

Status Store::UpdateAttemptInTx(const AttemptRecord& a) {
  Result<Statement*> s = db_->Prepare(
      "UPDATE attempts SET nodes = ?2, started_at = ?3, ended_at = ?4, slurm_state = ?5, "
      "exit_code = ?6, action = ?7, end_reason = ?8, trainer_end_reason = ?9, resume_mode = ?10, "
      "checkpoint = ?11, step0 = ?12, last_step = ?13, resume_warmup_steps = ?14, "
      "warmup_until = ?15, world_size = ?16, config_hash = ?17, trainer_message = ?18, "
      "trainer_exit_code = ?19 WHERE id = ?1");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, a.id)
      .Bind(2, a.nodes)
      .Bind(3, a.started_at)
      .Bind(4, a.ended_at)
      .Bind(5, a.slurm_state)
      .Bind(6, a.exit_code)
      .Bind(7, a.action)
      .Bind(8, a.end_reason)
      .Bind(9, a.trainer_end_reason)
      .Bind(10, a.resume_mode)
      .Bind(11, a.checkpoint)
      .Bind(12, a.step0)
      .Bind(13, a.last_step)
      .Bind(14, a.resume_warmup_steps)
      .Bind(15, a.warmup_until)
      .Bind(16, a.world_size)
      .Bind(17, a.config_hash)
      .Bind(18, a.trainer_message)
      .Bind(19, a.trainer_exit_code);
  return (*s)->Run();
}

Result<AttemptRecord> Store::GetAttempt(int64_t attempt_id) {
  Result<Statement*> s =
      db_->Prepare(std::string("SELECT ") + kAttemptColumns + " FROM attempts WHERE id = ?1");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, attempt_id);
  Result<bool> row = (*s)->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound("no attempt with id " + std::to_string(attempt_id));
  return ReadAttempt(**s);
}

Result<std::vector<AttemptRecord>> Store::ListAttempts(int64_t run_id) {
  Result<Statement*> s = db_->Prepare(std::string("SELECT ") + kAttemptColumns +
                                      " FROM attempts WHERE run_id = ?1 ORDER BY id");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, run_id);
  return (*s)->Collect<AttemptRecord>(ReadAttempt);
}

// ----------------------------------------------------------------------------------- steps

Status Store::InsertStepInTx(const StepRecord& r) {
  // Attempt ids grow in the order attempts happened (ingest reads event files in job/restart
  // order), so "earlier attempt" is "smaller attempt id".
  Result<Statement*> older = db_->Prepare(
      "UPDATE steps SET superseded = 1 "
      "WHERE run_id = ?1 AND step = ?2 AND attempt_id < ?3 AND superseded = 0");
  if (!older.ok()) return older.status();
  BATON_RETURN_IF_ERROR((*older)->Bind(1, r.run_id).Bind(2, r.step).Bind(3, r.attempt_id).Run());

  Result<Statement*> s = db_->Prepare(
      std::string("INSERT OR REPLACE INTO steps (") + kStepColumns +
      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
      "EXISTS (SELECT 1 FROM steps WHERE run_id = ?1 AND step = ?3 AND attempt_id > ?2), ?19, "
      "?20)");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, r.run_id)
      .Bind(2, r.attempt_id)
      .Bind(3, r.step)
      .Bind(4, r.time)
      .Bind(5, r.lr)
      .Bind(6, r.loss)
      .Bind(7, r.loss_video)
      .Bind(8, r.loss_action)
      .Bind(9, r.grad_norm)
      .Bind(10, r.tokens)
      .Bind(11, r.padded_tokens)
      .Bind(12, r.samples)
      .Bind(13, r.valid_frames)
      .Bind(14, r.padded_frames)
      .Bind(15, r.step_time_s)
      .Bind(16, r.tokens_per_s)
      .Bind(17, static_cast<int64_t>(r.in_warmup))
      .Bind(18, r.epoch)
      .Bind(19, static_cast<int64_t>(r.nonfinite))
      .Bind(20, EncodeEpisodes(r.nonfinite_episodes));
  BATON_RETURN_IF_ERROR((*s)->Run());

  Result<Statement*> last = db_->Prepare(
      "UPDATE attempts SET last_step = ?2 WHERE id = ?1 AND (last_step IS NULL OR last_step < ?2)");
  if (!last.ok()) return last.status();
  return (*last)->Bind(1, r.attempt_id).Bind(2, r.step).Run();
}

Result<std::vector<StepRecord>> Store::ListSteps(int64_t run_id, const StepQuery& q) {
  Result<Statement*> s = db_->Prepare(
      std::string("SELECT ") + kStepColumns +
      " FROM steps WHERE run_id = ?1 AND step BETWEEN ?2 AND ?3 AND (?4 OR superseded = 0) "
      "ORDER BY step, attempt_id LIMIT ?5 OFFSET ?6");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, run_id)
      .Bind(2, q.from_step)
      .Bind(3, q.to_step)
      .Bind(4, static_cast<int64_t>(q.include_superseded))
      .Bind(5, q.limit)
      .Bind(6, q.offset);
  return (*s)->Collect<StepRecord>(ReadStep);
}

Result<int64_t> Store::CountSteps(int64_t run_id, bool include_superseded) {
  Result<Statement*> s =
      db_->Prepare("SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND (?2 OR superseded = 0)");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, run_id).Bind(2, static_cast<int64_t>(include_superseded));
  Result<bool> row = (*s)->Step();
  if (!row.ok()) return row.status();
  return (*s)->Int(0);
}

Result<NonfiniteCounts> Store::CountNonfiniteSteps(int64_t run_id) {
  Result<Statement*> s = db_->Prepare(
      "SELECT COALESCE(SUM(superseded = 0), 0), COALESCE(SUM(superseded = 1), 0) FROM steps "
      "WHERE run_id = ?1 AND nonfinite = 1");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, run_id);
  Result<bool> row = (*s)->Step();
  if (!row.ok()) return row.status();
  NonfiniteCounts c;
  if (*row) {
    c.effective = (*s)->Int(0);
    c.superseded = (*s)->Int(1);
  }
  return c;
}

Result<std::vector<StepRecord>> Store::ListNonfiniteSteps(int64_t run_id, bool include_superseded,
                                                          int64_t limit) {
  Result<Statement*> s =
      db_->Prepare(std::string("SELECT ") + kStepColumns +
                   " FROM steps WHERE run_id = ?1 AND nonfinite = 1 AND (?2 OR superseded = 0) "
                   "ORDER BY step, attempt_id LIMIT ?3");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, run_id).Bind(2, static_cast<int64_t>(include_superseded)).Bind(3, limit);
  return (*s)->Collect<StepRecord>(ReadStep);
}

Status Store::InsertMicrostepInTx(const MicrostepRecord& m) {
  Result<Statement*> s = db_->Prepare(
      "INSERT OR REPLACE INTO microsteps (run_id, attempt_id, step, micro, tokens, fwd_bwd_s, "
      "peak_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!s.ok()) return s.status();
  return (*s)
      ->Bind(1, m.run_id)
      .Bind(2, m.attempt_id)
      .Bind(3, m.step)
      .Bind(4, m.micro)
      .Bind(5, m.tokens)
      .Bind(6, m.fwd_bwd_s)
      .Bind(7, m.peak_bytes)
      .Run();
}

Result<std::vector<MicrostepRecord>> Store::ListMicrosteps(int64_t run_id) {
  Result<Statement*> s = db_->Prepare(
      "SELECT run_id, attempt_id, step, micro, tokens, fwd_bwd_s, peak_bytes FROM microsteps "
      "WHERE run_id = ?1 ORDER BY attempt_id, step, micro");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, run_id);
  return (*s)->Collect<MicrostepRecord>([](const Statement& r) {
    MicrostepRecord m;
    m.run_id = r.Int(0);
    m.attempt_id = r.Int(1);
    m.step = r.Int(2);
    m.micro = r.Int(3);
    m.tokens = r.Int(4);
    m.fwd_bwd_s = r.Double(5);
    m.peak_bytes = r.Int(6);
    return m;
  });
}

// ----------------------------------------------------------------------------- checkpoints

Status Store::UpsertCheckpointInTx(const CheckpointRecord& c) {
  Result<Statement*> s = db_->Prepare(
      "INSERT OR REPLACE INTO checkpoints (run_id, step, attempt_id, path, bytes, seconds, reason, "
      "valid, time) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  if (!s.ok()) return s.status();
  return (*s)
      ->Bind(1, c.run_id)
      .Bind(2, c.step)
      .Bind(3, c.attempt_id)
      .Bind(4, c.path)
      .Bind(5, c.bytes)
      .Bind(6, c.seconds)
      .Bind(7, c.reason)
      .Bind(8, static_cast<int64_t>(c.valid))
      .Bind(9, c.time)
      .Run();
}

Result<std::vector<CheckpointRecord>> Store::ListCheckpoints(int64_t run_id) {
  Result<Statement*> s = db_->Prepare(
      "SELECT run_id, step, attempt_id, path, bytes, seconds, reason, valid, time "
      "FROM checkpoints WHERE run_id = ?1 ORDER BY step DESC");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, run_id);
  return (*s)->Collect<CheckpointRecord>([](const Statement& r) {
    CheckpointRecord c;
    c.run_id = r.Int(0);
    c.step = r.Int(1);
    c.attempt_id = r.OptInt(2);
    c.path = r.Text(3);
    c.bytes = r.Int(4);
    c.seconds = r.Double(5);
    c.reason = r.Text(6);
    c.valid = r.Int(7) != 0;
    c.time = r.Double(8);
    return c;
  });
}

// -------------------------------------------------------------------------- ingest cursors

Result<int64_t> Store::CursorInTx(const std::string& path) {
  Result<Statement*> s = db_->Prepare("SELECT offset FROM ingest_cursors WHERE path = ?1");
  if (!s.ok()) return s.status();
  (*s)->Bind(1, path);
  Result<bool> row = (*s)->Step();
  if (!row.ok()) return row.status();
  return *row ? (*s)->Int(0) : 0;
}

Status Store::SetCursorInTx(const std::string& path, int64_t run_id, int64_t offset,
                            int64_t bad_lines_added, double now) {
  Result<Statement*> s = db_->Prepare(
      "INSERT INTO ingest_cursors (path, run_id, offset, bad_lines, updated_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (path) DO UPDATE SET offset = excluded.offset, "
      "bad_lines = bad_lines + excluded.bad_lines, updated_at = excluded.updated_at");
  if (!s.ok()) return s.status();
  return (*s)
      ->Bind(1, path)
      .Bind(2, run_id)
      .Bind(3, offset)
      .Bind(4, bad_lines_added)
      .Bind(5, now)
      .Run();
}

}  // namespace baton
