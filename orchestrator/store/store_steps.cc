// Store: steps, micro-steps, checkpoints, stop-save budgets and write probes (store.h).
#include <cctype>
#include <map>
#include <optional>
#include <utility>

#include "orchestrator/store/record_columns.h"
#include "orchestrator/store/store.h"

namespace baton {

namespace {

// The step upsert (superseded computed by the store), as InsertStepInTx runs it.
const TableStatement& StepUpsert() {
  static const TableStatement kInsert = [] {
    const ColumnTable<StepRecord>& t = StepTable();
    return t.Upsert(
        "attempt_id, step",
        {{"superseded", "CASE WHEN EXISTS (SELECT 1 FROM steps WHERE run_id = " +
                            t.Param("run_id") + " AND step = " + t.Param("step") +
                            " AND attempt_id > " + t.Param("attempt_id") + ") THEN 1 ELSE 0 END"}});
  }();
  return kInsert;
}

// `sql` with every parameter ?N renumbered ?(N + offset).
std::string ShiftParams(const std::string& sql, size_t offset) {
  std::string out;
  for (size_t i = 0; i < sql.size(); ++i) {
    out += sql[i];
    if (sql[i] != '?') continue;
    size_t j = i + 1;
    while (j < sql.size() && std::isdigit(static_cast<unsigned char>(sql[j]))) ++j;
    out += std::to_string(std::stoul(sql.substr(i + 1, j - i - 1)) + offset);
    i = j - 1;
  }
  return out;
}

// The step upsert with superseded = 0: for rows no later attempt has a row at (the batch asked
// once, rather than every row asking as StepUpsert() does).
const TableStatement& PlainStepUpsert() {
  static const TableStatement kInsert =
      StepTable().Upsert("attempt_id, step", {{"superseded", "0"}});
  return kInsert;
}

// How a batch of one attempt's step rows is written, from what the table already holds at
// their steps: the common case (nothing) takes a plain INSERT, which on PostgreSQL costs about
// two thirds of an upsert's time.
enum class StepWrite {
  kInsert,  // no row of this attempt or a later one: every row is new and not superseded
  kPlain,   // rows of this attempt only: upserts, none superseded
  kFull,    // a later attempt's rows too: upserts that ask, row by row, if they are superseded
};

// Multi-row statements of 1, 2, 4 ... 256 rows of `one` (only these sizes, so a connection
// caches at most nine texts of each); row k binds its parameters shifted by k * columns. Without
// `conflict` the upsert's ON CONFLICT clause is left out (a plain INSERT).
constexpr size_t kMaxRowsLog2 = 8;
std::vector<std::string> MultiRowTexts(const std::string& one, bool conflict) {
  const size_t values = one.find(" VALUES ") + 8, on_conflict = one.find(" ON CONFLICT");
  const std::string row = one.substr(values, on_conflict - values);
  std::vector<std::string> texts;
  for (size_t n = 1; n <= (size_t{1} << kMaxRowsLog2); n *= 2) {
    std::string sql = one.substr(0, values);
    for (size_t k = 0; k < n; ++k) {
      sql += (k > 0 ? ", " : "") + ShiftParams(row, k * StepTable().size());
    }
    texts.push_back(sql + (conflict ? one.substr(on_conflict) : ""));
  }
  return texts;
}
const std::string& MultiStepWrite(size_t rows_log2, StepWrite how) {
  static const std::vector<std::string> kFull = MultiRowTexts(StepUpsert().sql, true);
  static const std::vector<std::string> kPlain = MultiRowTexts(PlainStepUpsert().sql, true);
  static const std::vector<std::string> kInsert = MultiRowTexts(PlainStepUpsert().sql, false);
  switch (how) {
    case StepWrite::kInsert:
      return kInsert[rows_log2];
    case StepWrite::kPlain:
      return kPlain[rows_log2];
    case StepWrite::kFull:
      break;
  }
  return kFull[rows_log2];
}

// One question for a batch of attempt `attempt_id`'s rows at steps [first, last]: the largest
// attempt of this one or later with a row there. None: plain inserts; this one: upserts; a later
// one: the batch's rows there are superseded already (rows ingested late).
Result<StepWrite> HowToWriteSteps(Db& db, int64_t run_id, int64_t attempt_id, int64_t first,
                                  int64_t last) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db.Prepare("SELECT MAX(attempt_id) FROM steps WHERE run_id = ?1 AND step "
                                    "BETWEEN ?2 AND ?3 AND attempt_id >= ?4"));
  s->Bind(1, run_id).Bind(2, first).Bind(3, last).Bind(4, attempt_id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const std::optional<int64_t> newest = row ? s->OptInt(0) : std::nullopt;
  s->Reset();
  if (!newest) return StepWrite::kInsert;
  return *newest == attempt_id ? StepWrite::kPlain : StepWrite::kFull;
}

// Store::InsertStepsInTx for rows [begin, end) of one attempt.
Status InsertAttemptSteps(Db& db, RollupMaintainer& rollups, const StepRecord* begin,
                          const StepRecord* end) {
  if (begin == end) return Status::Ok();
  // One row per (attempt, step), the last written winning, as one-by-one upserts leave it; a
  // multi-row upsert may not touch one row twice.
  std::map<std::pair<int64_t, int64_t>, const StepRecord*> rows;
  for (const StepRecord* r = begin; r != end; ++r) rows[{r->attempt_id, r->step}] = r;
  // Earlier attempts' rows at these steps are superseded: one UPDATE per range of consecutive
  // steps of an attempt (a batch is usually one range).
  BATON_ASSIGN_OR_RETURN(
      Statement * older,
      db.Prepare("UPDATE steps SET superseded = 1 WHERE run_id = ?1 AND step BETWEEN ?2 AND ?3 "
                 "AND attempt_id < ?4 AND superseded = 0"));
  int64_t last_step = begin->step;  // the largest step written
  const StepRecord* lo = nullptr;
  const StepRecord* hi = nullptr;
  auto flush_range = [&]() -> Status {
    if (lo == nullptr) return Status::Ok();
    older->Reset();
    return older->Bind(1, lo->run_id)
        .Bind(2, lo->step)
        .Bind(3, hi->step)
        .Bind(4, lo->attempt_id)
        .Run();
  };
  std::vector<const StepRecord*> ordered;
  for (const auto& [key, r] : rows) {
    if (lo == nullptr || r->step != hi->step + 1) {
      BATON_RETURN_IF_ERROR(flush_range());
      lo = r;
    }
    hi = r;
    ordered.push_back(r);
    last_step = std::max(last_step, r->step);
    rollups.MarkDirty(r->run_id, r->step);
  }
  BATON_RETURN_IF_ERROR(flush_range());
  // The rows are in step order (one attempt): one question for the whole batch, and the common
  // answers (no rows there yet, or none of a later attempt) let every row be written without a
  // look-up of its own.
  BATON_ASSIGN_OR_RETURN(const StepWrite how,
                         HowToWriteSteps(db, begin->run_id, begin->attempt_id,
                                         ordered.front()->step, ordered.back()->step));
  const TableStatement& one = how == StepWrite::kFull ? StepUpsert() : PlainStepUpsert();
  for (size_t at = 0; at < ordered.size();) {
    size_t log2 = kMaxRowsLog2;
    while ((size_t{1} << log2) > ordered.size() - at) --log2;
    BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare(MultiStepWrite(log2, how)));
    for (size_t k = 0; k < (size_t{1} << log2); ++k) {
      StepTable().Bind(*s, one, *ordered[at + k], static_cast<int>(k * StepTable().size()));
    }
    BATON_RETURN_IF_ERROR(s->Run());
    at += size_t{1} << log2;
  }
  BATON_ASSIGN_OR_RETURN(Statement * last,
                         db.Prepare("UPDATE attempts SET last_step = ?2 "
                                    "WHERE id = ?1 AND (last_step IS NULL OR last_step < ?2)"));
  return last->Bind(1, begin->attempt_id).Bind(2, last_step + 1).Run();
}

}  // namespace

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
  BATON_RETURN_IF_ERROR(StepTable().Write(*db_, StepUpsert(), r));

  BATON_ASSIGN_OR_RETURN(Statement * last,
                         db_->Prepare("UPDATE attempts SET last_step = ?2 "
                                      "WHERE id = ?1 AND (last_step IS NULL OR last_step < ?2)"));
  // last_step counts finished steps (segment_end's "step"); step row k means k + 1 are done.
  BATON_RETURN_IF_ERROR(last->Bind(1, r.attempt_id).Bind(2, r.step + 1).Run());
  rollups_->MarkDirty(r.run_id, r.step);
  return Status::Ok();
}

Status Store::InsertStepsInTx(const std::vector<StepRecord>& rows) {
  // Attempt by attempt, in the order given: a multi-row statement does not see its own rows, so
  // two attempts' rows in one would miss each other's superseded marks.
  for (size_t i = 0; i < rows.size();) {
    size_t j = i + 1;
    while (j < rows.size() && rows[j].attempt_id == rows[i].attempt_id) ++j;
    BATON_RETURN_IF_ERROR(InsertAttemptSteps(*db_, *rollups_, rows.data() + i, rows.data() + j));
    i = j;
  }
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
