// Store: the runs and attempts tables (store.h).
#include "orchestrator/store/record_columns.h"
#include "orchestrator/store/store.h"

namespace baton {

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
  r.owner = run.owner;
  r.cluster = run.cluster;
  r.created_at = now;
  r.updated_at = now;
  static const TableStatement kInsert = [] {
    TableStatement st = RunTable().Insert("INSERT");
    st.sql += " RETURNING id";
    return st;
  }();
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kInsert.sql));
  RunTable().Bind(*s, kInsert, r);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  if (!row) return Status::Internal("INSERT INTO runs returned no id");
  const int64_t id = s->Int(0);
  s->Reset();  // finished: an active statement would keep SQLite's COMMIT from completing
  return id;
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

Status Store::SetRunClusterInTx(int64_t run_id, const std::string& cluster) {
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare("UPDATE runs SET cluster = ? WHERE id = ?"));
  return s->Bind(1, cluster).Bind(2, run_id).Run();
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
  return s->Bind(1, run_id).Bind(2, Name(status)).Bind(3, reason).Bind(4, now).Run();
}

Status Store::SetActiveRunStatusInTx(int64_t run_id, RunStatus status, const std::string& reason,
                                     double now) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db_->Prepare("UPDATE runs SET status = ?2, reason = ?3, updated_at = ?4 "
                                      "WHERE id = ?1 "
                                      "AND status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED') "
                                      "AND (status <> ?2 OR reason <> ?3)"));
  return s->Bind(1, run_id).Bind(2, Name(status)).Bind(3, reason).Bind(4, now).Run();
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

Result<std::vector<RunRecord>> Store::ListRuns(int64_t limit, int64_t offset,
                                               const RunFilter& filter) {
  static const std::string kSql = RunTable().Select(
      "WHERE (? = '' OR owner = ?) AND (? = '' OR cluster = ?) ORDER BY id DESC LIMIT ? OFFSET ?");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, filter.owner).Bind(2, filter.owner).Bind(3, filter.cluster).Bind(4, filter.cluster);
  s->Bind(5, limit).Bind(6, offset);
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
                                         int64_t restart_count, int64_t in_job_seq,
                                         const std::string& cluster) {
  BATON_ASSIGN_OR_RETURN(Statement * find,
                         db_->Prepare("SELECT id FROM attempts WHERE run_id = ?1 AND job_id = ?2 "
                                      "AND restart_count = ?3 AND in_job_seq = ?4 "
                                      "AND cluster = ?5"));
  find->Bind(1, run_id).Bind(2, job_id).Bind(3, restart_count).Bind(4, in_job_seq).Bind(5, cluster);
  BATON_ASSIGN_OR_RETURN(const bool row, find->Step());
  if (row) {
    const int64_t id = find->Int(0);
    find->Reset();
    return id;
  }
  BATON_ASSIGN_OR_RETURN(Statement * ins,
                         db_->Prepare("INSERT INTO attempts (run_id, job_id, restart_count, "
                                      "in_job_seq, cluster) VALUES (?, ?, ?, ?, ?) RETURNING id"));
  ins->Bind(1, run_id).Bind(2, job_id).Bind(3, restart_count).Bind(4, in_job_seq).Bind(5, cluster);
  BATON_ASSIGN_OR_RETURN(const bool inserted, ins->Step());
  if (!inserted) return Status::Internal("INSERT INTO attempts returned no id");
  const int64_t id = ins->Int(0);
  ins->Reset();
  return id;
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

}  // namespace baton
