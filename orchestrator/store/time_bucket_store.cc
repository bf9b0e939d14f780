#include "orchestrator/store/time_bucket_store.h"

#include <map>
#include <string>

#include "orchestrator/store/run_history_queries.h"
#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

// attempt_id of the row that holds the whole run.
constexpr int64_t kRunRow = 0;

// "queue_s, requeue_hold_s, ...": the bucket columns, in TimeBucket order.
std::string BucketColumns() {
  std::string out;
  for (TimeBucket b : AllTimeBuckets()) {
    out += (out.empty() ? "" : ", ") + std::string(TimeBucketName(b)) + "_s";
  }
  return out;
}

// The columns after the buckets, in table order (schema/sql/009_ettr.sql).
constexpr const char* kTailColumns =
    "productive_steps, saves, save_s, interruptions, running_s, as_of";
constexpr int kFixedTail = 6;

Result<bool> AttemptsHaveColumn(Store& store, const std::string& name) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         StoreInternal::Db(store).Prepare(
                             "SELECT 1 FROM pragma_table_info('attempts') WHERE name = ?1"));
  s->Bind(1, name);
  return s->Step();
}

// The columns later schema versions add to attempts for in-job restarts and hang detection,
// read when this database has them (a binary built before they existed reads none): the one
// place that wires them into the buckets.
Status FillOptionalAttemptColumns(Store& store, int64_t run_id, BucketInput* in) {
  static const char* kNames[] = {"in_job_seq", "hang_last_heartbeat_at", "hang_detected_at"};
  std::string select = "SELECT id";
  bool any = false;
  for (const char* name : kNames) {
    BATON_ASSIGN_OR_RETURN(const bool has, AttemptsHaveColumn(store, name));
    select += has ? std::string(", ") + name : std::string(", NULL");
    any = any || has;
  }
  if (!any) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(
      Statement * s, StoreInternal::Db(store).Prepare(select + " FROM attempts WHERE run_id = ?1"));
  s->Bind(1, run_id);
  std::map<int64_t, BucketAttempt*> by_id;
  for (BucketAttempt& a : in->attempts) by_id[a.attempt_id] = &a;
  while (true) {
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (!row) break;
    auto it = by_id.find(s->Int(0));
    if (it == by_id.end()) continue;
    it->second->in_job_seq = s->OptInt(1).value_or(0);
    it->second->hang_last_heartbeat_at = s->OptDouble(2);
    it->second->hang_detected_at = s->OptDouble(3);
  }
  return Status::Ok();
}

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

Result<double> NonfiniteStepTime(Store& store, int64_t run_id, int64_t attempt_id) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s, StoreInternal::Db(store).Prepare(
                         "SELECT COALESCE(SUM(step_time_s), 0) FROM steps INDEXED BY "
                         "steps_nonfinite WHERE run_id = ?1 AND nonfinite = 1 AND superseded = 0 "
                         "AND attempt_id = ?2"));
  s->Bind(1, run_id).Bind(2, attempt_id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  return row ? s->Double(0) : 0.0;
}

Status WriteRow(Store& store, int64_t run_id, int64_t attempt_id, const TimeBuckets& b,
                int64_t interruptions, double running_s, double as_of) {
  static const std::string kSql = [] {
    std::string params;
    const int n = 3 + int(kTimeBucketCount) + kFixedTail;
    for (int i = 1; i <= n; ++i) params += (i > 1 ? ", ?" : "?") + std::to_string(i);
    return "INSERT OR REPLACE INTO time_buckets (run_id, attempt_id, wall_s, " + BucketColumns() +
           ", " + kTailColumns + ") VALUES (" + params + ")";
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

Result<BucketInput> LoadBucketInput(Store& store, const RunRecord& run, double now) {
  BucketInput in;
  in.submitted_at = run.created_at;
  in.run_terminal = IsTerminal(run.status);
  in.now = now;
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptStepStats> stats,
                         ReadAttemptStepStats(store, run.id));
  BATON_ASSIGN_OR_RETURN(const std::vector<CheckpointRecord> saves, store.ListCheckpoints(run.id));
  for (const AttemptRecord& r : attempts) {
    BucketAttempt a = BucketAttemptFrom(r);
    for (const AttemptStepStats& st : stats) {
      if (st.attempt_id != r.id) continue;
      BATON_ASSIGN_OR_RETURN(const double nonfinite_s, NonfiniteStepTime(store, run.id, r.id));
      a.skipped_s = nonfinite_s;
      a.productive_s = std::max(0.0, st.step_time_s - nonfinite_s);
      a.productive_steps = st.effective_steps - st.nonfinite_steps;
      a.rolled_back_s = st.superseded_step_time_s;
      if (st.effective_steps + st.superseded_steps > 0)
        BATON_RETURN_IF_ERROR(FillStepEnds(store, &a));
    }
    for (const CheckpointRecord& c : saves) {
      if (c.attempt_id && *c.attempt_id == r.id) AddSave(&a, c);
    }
    in.attempts.push_back(std::move(a));
  }
  BATON_RETURN_IF_ERROR(FillOptionalAttemptColumns(store, run.id, &in));
  return in;
}

Status RefreshTimeBucketsInTx(Store& store, const RunRecord& run, double now) {
  BATON_ASSIGN_OR_RETURN(const BucketInput in, LoadBucketInput(store, run, now));
  const RunTimeBuckets b = ComputeTimeBuckets(in);
  BATON_ASSIGN_OR_RETURN(Statement * del, StoreInternal::Db(store).Prepare(
                                              "DELETE FROM time_buckets WHERE run_id = ?1"));
  BATON_RETURN_IF_ERROR(del->Bind(1, run.id).Run());
  BATON_RETURN_IF_ERROR(
      WriteRow(store, run.id, kRunRow, b.run, b.interruptions, b.running_s, b.as_of));
  for (const AttemptTimeBuckets& a : b.attempts) {
    BATON_RETURN_IF_ERROR(
        WriteRow(store, run.id, a.attempt_id, a.buckets, a.interrupted ? 1 : 0, 0.0, b.as_of));
  }
  return Status::Ok();
}

Status RefreshTimeBuckets(Store& store, const RunRecord& run, double now) {
  return store.Write([&] { return RefreshTimeBucketsInTx(store, run, now); });
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
