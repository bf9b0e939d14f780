// Store: steps, micro-steps, checkpoints, stop-save budgets and write probes (store.h).
#include "orchestrator/store/record_columns.h"
#include "orchestrator/store/store.h"

namespace baton {

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
    return t.Upsert(
        "attempt_id, step",
        {{"superseded", "CASE WHEN EXISTS (SELECT 1 FROM steps WHERE run_id = " +
                            t.Param("run_id") + " AND step = " + t.Param("step") +
                            " AND attempt_id > " + t.Param("attempt_id") + ") THEN 1 ELSE 0 END"}});
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
      "WHERE run_id = ?1 AND step BETWEEN ?2 AND ?3 AND (?4 <> 0 OR superseded = 0) "
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
      db_->Prepare("SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND (?2 <> 0 OR superseded = 0)"));
  s->Bind(1, run_id).Bind(2, static_cast<int64_t>(include_superseded));
  BATON_RETURN_IF_ERROR(s->Step().status());
  return s->Int(0);
}

Result<NonfiniteCounts> Store::CountNonfiniteSteps(int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare("SELECT COALESCE(SUM(CASE WHEN superseded = 0 THEN 1 ELSE 0 END), 0), "
                   "COALESCE(SUM(CASE WHEN superseded = 1 THEN 1 ELSE 0 END), 0) "
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
      "INDEXED BY steps_nonfinite WHERE run_id = ?1 AND nonfinite = 1 AND (?2 <> 0 OR superseded = "
      "0) "
      "ORDER BY step, attempt_id LIMIT ?3");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(kSql));
  s->Bind(1, run_id).Bind(2, static_cast<int64_t>(include_superseded)).Bind(3, limit);
  return StepTable().ReadAll(*s);
}

Status Store::InsertMicrostepInTx(const MicrostepRecord& m) {
  static const TableStatement kInsert = MicrostepTable().Upsert("attempt_id, step, micro");
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
  static const TableStatement kInsert = CheckpointTable().Upsert("run_id, step");
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
  static const TableStatement kInsert = StopSaveBudgetTable().Upsert("run_id");
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
  static const TableStatement kInsert = WriteProbeTable().Upsert("folder");
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

}  // namespace baton
