#include "orchestrator/store/run_metrics.h"

#include "orchestrator/store/store_internal.h"
#include "orchestrator/store/time_bucket_store.h"
#include "schema/clock.h"

namespace baton {

namespace {

Status ReadLastStep(Db& db, RunMetrics& m) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db.Prepare("SELECT step, time, tokens_per_s, loss FROM steps WHERE "
                                    "run_id = ? AND superseded = 0 ORDER BY step DESC LIMIT 1"));
  s->Bind(1, m.run.id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  if (row) {
    m.last_step = s->Int(0) + 1;  // steps finished, as attempts.last_step counts them
    m.last_step_time = s->OptDouble(1);
    m.tokens_per_s = s->OptDouble(2);
    m.loss = s->OptDouble(3);
  }
  s->Reset();
  BATON_ASSIGN_OR_RETURN(
      Statement * c,
      db.Prepare("SELECT MAX(time) FROM checkpoints WHERE run_id = ? AND valid = 1"));
  c->Bind(1, m.run.id);
  BATON_ASSIGN_OR_RETURN(const bool crow, c->Step());
  if (crow) m.checkpoint_time = c->OptDouble(0);
  c->Reset();
  return Status::Ok();
}

Status ReadLatestEval(Db& db, RunMetrics& m) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db.Prepare("SELECT step, loss FROM evals WHERE run_id = ? ORDER BY step DESC LIMIT 1"));
  s->Bind(1, m.run.id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  if (row) {
    m.eval_step = s->Int(0);
    m.eval_loss = s->OptDouble(1);
  }
  s->Reset();
  return Status::Ok();
}

Status ReadAttempts(Db& db, RunMetrics& m) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db.Prepare("SELECT end_reason, action, started_at, ended_at, "
                                    "hang_detected_at FROM attempts WHERE run_id = ? ORDER BY id"));
  s->Bind(1, m.run.id);
  std::optional<double> requeued_at;
  while (true) {
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (!row) break;
    ++m.attempts_by_reason[s->Text(0)];
    const std::optional<double> started = s->OptDouble(2);
    if (requeued_at && started && *started > *requeued_at)
      m.requeue_hold_s += *started - *requeued_at;
    requeued_at = s->Text(1) == "requeue" ? s->OptDouble(3) : std::nullopt;
    if (!s->IsNull(4)) ++m.hangs;
  }
  s->Reset();
  return Status::Ok();
}

// The run row of time_buckets (attempt_id 0) as the sync pass left it; computed from the
// records, read-only, when the run has no row yet.
Status ReadEttr(Store& store, Db& db, RunMetrics& m, double now) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db.Prepare(
          "SELECT wall_s, productive_s FROM time_buckets WHERE run_id = ? AND attempt_id = 0"));
  s->Bind(1, m.run.id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  if (row) {
    const double wall = s->Double(0);
    if (wall > 0) m.ettr = s->Double(1) / wall;
    s->Reset();
    return Status::Ok();
  }
  s->Reset();
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(m.run.id));
  BATON_ASSIGN_OR_RETURN(const RunTimeBuckets b, TimeBucketsOf(store, run, now));
  m.ettr = Ettr(b.run);
  return Status::Ok();
}

}  // namespace

Result<std::vector<RunMetrics>> ReadRunMetrics(Store& store, int64_t ended_cap) {
  Db& db = StoreInternal::Db(store);
  const double now = UnixTimeNow();
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db.Prepare("SELECT id, name, status, owner, cluster, partition FROM runs WHERE status IN "
                 "('PENDING', 'RUNNING', 'REQUEUED') UNION ALL SELECT * FROM (SELECT id, name, "
                 "status, owner, cluster, partition FROM runs WHERE status IN ('COMPLETED', "
                 "'FAILED', 'CANCELLED') ORDER BY updated_at DESC, id DESC LIMIT ?) AS ended"));
  s->Bind(1, ended_cap);
  BATON_ASSIGN_OR_RETURN(std::vector<RunMetrics> out,
                         s->Collect<RunMetrics>([](const Statement& r) {
                           RunMetrics m;
                           m.run.id = r.Int(0);
                           m.run.name = r.Text(1);
                           m.run.status = Find<RunStatus>(r.Text(2)).value_or(RunStatus::kPending);
                           m.run.owner = r.Text(3);
                           m.run.cluster = r.Text(4);
                           m.run.partition = r.Text(5);
                           return m;
                         }));
  for (RunMetrics& m : out) {
    BATON_RETURN_IF_ERROR(ReadLastStep(db, m));
    BATON_RETURN_IF_ERROR(ReadAttempts(db, m));
    BATON_RETURN_IF_ERROR(ReadEttr(store, db, m, now));
    BATON_RETURN_IF_ERROR(ReadLatestEval(db, m));
  }
  return out;
}

}  // namespace baton
