#include "orchestrator/store/time_bucket_store.h"

#include <map>
#include <string>

#include "orchestrator/store/record_columns.h"
#include "orchestrator/store/run_history_queries.h"
#include "orchestrator/store/sql_dialect.h"
#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

// attempt_id of the row that holds the whole run.
constexpr int64_t kRunRow = 0;

// "queue_s, requeue_hold_s, ...": the bucket columns, in TimeBucket order.
std::string BucketColumns() {
  std::string out;
  for (TimeBucket b : AllTimeBuckets()) {
    out += (out.empty() ? "" : ", ") + std::string(Name(b)) + "_s";
  }
  return out;
}

// The columns after the buckets, in table order (schema/sql/009_ettr.sql).
constexpr const char* kTailColumns =
    "productive_steps, saves, save_s, interruptions, running_s, as_of";
constexpr int kFixedTail = 6;

// The first and last step rows of an attempt (primary key order), superseded or not.
Status FillStepEnds(Store& store, BucketAttempt* a) {
  for (const char* order : {"ASC", "DESC"}) {
    BATON_ASSIGN_OR_RETURN(
        Statement * s, StoreInternal::Db(store).Prepare(
                           std::string("SELECT time, step_time_s FROM steps WHERE attempt_id = ?1 "
                                       "ORDER BY step ") +
                           order + " LIMIT 1"));
    s->Bind(1, a->attempt_id);
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (!row) return Status::Ok();
    const double time = s->Double(0);
    const double dt = std::isfinite(s->Double(1)) ? std::max(0.0, s->Double(1)) : 0.0;
    if (order[0] == 'A') {
      a->first_step_start = time - dt;
    } else {
      a->last_step_end = time;
    }
  }
  return Status::Ok();
}

// Step time of each attempt's effective skipped (non-finite) steps, in one grouped read.
using SecondsByAttempt = std::map<int64_t, double>;

Result<SecondsByAttempt> NonfiniteStepTimes(Store& store, int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s, StoreInternal::Db(store).Prepare(
                         "SELECT attempt_id, COALESCE(SUM(step_time_s), 0) FROM steps INDEXED BY "
                         "steps_nonfinite WHERE run_id = ?1 AND nonfinite = 1 AND superseded = 0 "
                         "GROUP BY attempt_id"));
  s->Bind(1, run_id);
  SecondsByAttempt out;
  while (true) {
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (!row) return out;
    out[s->Int(0)] = s->Double(1);
  }
}

Status WriteRow(Store& store, int64_t run_id, int64_t attempt_id, const TimeBuckets& b,
                int64_t interruptions, double running_s, double as_of) {
  static const std::string kSql = [] {
    std::string params;
    const int n = 3 + int(kTimeBucketCount) + kFixedTail;
    for (int i = 1; i <= n; ++i) params += (i > 1 ? ", ?" : "?") + std::to_string(i);
    const std::string columns =
        "run_id, attempt_id, wall_s, " + BucketColumns() + ", " + kTailColumns;
    return "INSERT INTO time_buckets (" + columns + ") VALUES (" + params + ")" +
           OnConflictReplace("run_id, attempt_id", columns);
  }();
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(kSql));
  int p = 0;
  s->Bind(++p, run_id);
  s->Bind(++p, attempt_id);
  s->Bind(++p, b.wall_s);
  for (double v : b.s) s->Bind(++p, v);
  for (int64_t v : {b.productive_steps, b.saves}) s->Bind(++p, v);
  s->Bind(++p, b.save_s);
  s->Bind(++p, interruptions);
  s->Bind(++p, running_s);
  s->Bind(++p, as_of);
  return s->Run();
}

}  // namespace

Result<std::vector<std::string>> TimeBucketInputStamp(Store& store, int64_t run_id) {
  static const std::pair<const char*, int> kSql[] = {
      {"SELECT status, updated_at FROM runs WHERE id = ?1", 2},
      {"SELECT COUNT(*), MAX(id), SUM(COALESCE(started_at, 0)), SUM(COALESCE(ended_at, 0)), "
       "SUM(COALESCE(hold_released_at, 0)), SUM(COALESCE(last_step, 0)), SUM(eval_s), "
       "SUM(LENGTH(end_reason) + LENGTH(action) + LENGTH(slurm_state)) FROM attempts "
       "WHERE run_id = ?1",
       8},
      {"SELECT COUNT(*), SUM(step), SUM(COALESCE(seconds, 0)) FROM checkpoints WHERE run_id = ?1",
       3},
      {"SELECT COUNT(*), SUM(\"offset\") FROM ingest_cursors WHERE run_id = ?1", 2},
  };
  std::vector<std::string> out;
  for (const auto& [sql, columns] : kSql) {
    BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(sql));
    s->Bind(1, run_id);
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    for (int col = 0; row && col < columns; ++col) {
      out.push_back(s->IsNull(col) ? "null" : s->Text(col));
    }
    s->Reset();
  }
  return out;
}

Result<BucketInput> LoadBucketInput(Store& store, const RunRecord& run, double now) {
  BucketInput in;
  in.submitted_at = run.created_at;
  in.run_terminal = IsTerminal(run.status);
  in.now = now;
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptStepStats> stats,
                         ReadAttemptStepStats(store, run.id));
  BATON_ASSIGN_OR_RETURN(const std::vector<CheckpointRecord> saves, store.ListCheckpoints(run.id));
  BATON_ASSIGN_OR_RETURN(const SecondsByAttempt nonfinite_s, NonfiniteStepTimes(store, run.id));
  // Matched by attempt id through maps: linear in attempts, stats and saves (a run of 400,000
  // attempts must not be a loop over attempts inside a loop over attempts).
  std::map<int64_t, const AttemptStepStats*> stats_of;
  for (const AttemptStepStats& st : stats) stats_of[st.attempt_id] = &st;
  std::map<int64_t, std::vector<const CheckpointRecord*>> saves_of;
  for (const CheckpointRecord& c : saves) {
    if (c.attempt_id) saves_of[*c.attempt_id].push_back(&c);
  }
  in.attempts.reserve(attempts.size());
  for (const AttemptRecord& r : attempts) {
    BucketAttempt a = BucketAttemptFrom(r);
    if (const auto st = stats_of.find(r.id); st != stats_of.end()) {
      const auto nf = nonfinite_s.find(r.id);
      const double skipped = nf == nonfinite_s.end() ? 0.0 : nf->second;
      a.skipped_s = skipped;
      a.productive_s = std::max(0.0, st->second->step_time_s - skipped);
      a.productive_steps = st->second->effective_steps - st->second->nonfinite_steps;
      a.rolled_back_s = st->second->superseded_step_time_s;
      if (st->second->effective_steps + st->second->superseded_steps > 0)
        BATON_RETURN_IF_ERROR(FillStepEnds(store, &a));
    }
    if (const auto sv = saves_of.find(r.id); sv != saves_of.end()) {
      for (const CheckpointRecord* c : sv->second) AddSave(&a, *c);
    }
    in.attempts.push_back(std::move(a));
  }
  return in;
}

namespace {

Status WriteBucketRows(Store& store, int64_t run_id, const RunTimeBuckets& b) {
  BATON_ASSIGN_OR_RETURN(Statement * del, StoreInternal::Db(store).Prepare(
                                              "DELETE FROM time_buckets WHERE run_id = ?1"));
  BATON_RETURN_IF_ERROR(del->Bind(1, run_id).Run());
  BATON_RETURN_IF_ERROR(
      WriteRow(store, run_id, kRunRow, b.run, b.interruptions, b.running_s, b.as_of));
  for (const AttemptTimeBuckets& a : b.attempts) {
    BATON_RETURN_IF_ERROR(
        WriteRow(store, run_id, a.attempt_id, a.buckets, a.interrupted ? 1 : 0, 0.0, b.as_of));
  }
  return Status::Ok();
}

}  // namespace

Status RefreshTimeBucketsInTx(Store& store, const RunRecord& run, double now) {
  BATON_ASSIGN_OR_RETURN(const BucketInput in, LoadBucketInput(store, run, now));
  return WriteBucketRows(store, run.id, ComputeTimeBuckets(in));
}

Result<RunTimeBuckets> ComputeTimeBucketsUnlocked(Store& store, const RunRecord& run, double now,
                                                  std::vector<std::string>* stamp) {
  if (StoreInternal::Db(store).InTransaction()) {
    return Status::Internal("time buckets: computed outside a transaction only");
  }
  // The stamp first: inputs read after it are at least as new, so an unchanged stamp under the
  // write lock later means they are still current.
  BATON_ASSIGN_OR_RETURN(*stamp, TimeBucketInputStamp(store, run.id));
  BATON_ASSIGN_OR_RETURN(const BucketInput in, LoadBucketInput(store, run, now));
  ReleaseReadSnapshot(store);
  return ComputeTimeBuckets(in);
}

Status RefreshTimeBuckets(Store& store, const RunRecord& run, double now) {
  // Read and compute with no lock held (readers and the writer go on meanwhile); take the write
  // lock only to replace the rows, after checking that nothing they come from changed.
  std::vector<std::string> stamp;
  BATON_ASSIGN_OR_RETURN(const RunTimeBuckets b,
                         ComputeTimeBucketsUnlocked(store, run, now, &stamp));
  return store.WriteForRun(run.id, [&]() -> Status {
    BATON_ASSIGN_OR_RETURN(const std::vector<std::string> now_stamp,
                           TimeBucketInputStamp(store, run.id));
    if (now_stamp != stamp) return RefreshTimeBucketsInTx(store, run, now);  // changed: again
    return WriteBucketRows(store, run.id, b);
  });
}

Result<std::optional<RunTimeBuckets>> ReadTimeBuckets(Store& store, int64_t run_id) {
  static const std::string kSql = "SELECT attempt_id, wall_s, " + BucketColumns() + ", " +
                                  kTailColumns +
                                  " FROM time_buckets WHERE run_id = ?1 ORDER BY attempt_id";
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(kSql));
  s->Bind(1, run_id);
  RunTimeBuckets out;
  bool have_run = false;
  while (true) {
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (!row) break;
    int col = 0;
    const int64_t attempt_id = s->Int(col++);
    TimeBuckets b;
    b.wall_s = s->Double(col++);
    for (double& v : b.s) v = s->Double(col++);
    b.productive_steps = s->Int(col++);
    b.saves = s->Int(col++);
    b.save_s = s->Double(col++);
    const int64_t interruptions = s->Int(col++);
    const double running_s = s->Double(col++);
    out.as_of = s->Double(col++);
    if (attempt_id == kRunRow) {
      out.run = b;
      out.interruptions = interruptions;
      out.running_s = running_s;
      have_run = true;
    } else {
      out.attempts.push_back(AttemptTimeBuckets{attempt_id, b, interruptions > 0});
    }
  }
  if (!have_run) return std::optional<RunTimeBuckets>();
  return std::optional<RunTimeBuckets>(std::move(out));
}

Result<RunTimeBuckets> TimeBucketsOf(Store& store, const RunRecord& run, double now) {
  BATON_ASSIGN_OR_RETURN(std::optional<RunTimeBuckets> stored, ReadTimeBuckets(store, run.id));
  if (stored) return std::move(*stored);
  BATON_ASSIGN_OR_RETURN(const BucketInput in, LoadBucketInput(store, run, now));
  return ComputeTimeBuckets(in);
}

}  // namespace baton
