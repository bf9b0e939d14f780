#include "orchestrator/store/store_eval_jobs.h"

#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

constexpr const char* kEvalJobColumns =
    "id, run_id, step, attempt, job_id, state, reason, reported, submitted_at, updated_at, "
    "ended_at FROM eval_jobs";

EvalJobRecord ReadEvalJob(const Statement& r) {
  EvalJobRecord j;
  j.id = r.Int(0);
  j.run_id = r.Int(1);
  j.step = r.Int(2);
  j.attempt = r.Int(3);
  j.job_id = r.Text(4);
  j.state = r.Text(5);
  j.reason = r.Text(6);
  j.reported = r.Int(7) != 0;
  j.submitted_at = r.Double(8);
  j.updated_at = r.Double(9);
  j.ended_at = r.OptDouble(10);
  return j;
}

}  // namespace

Result<int64_t> InsertEvalJobInTx(Store& store, const EvalJobRecord& j) {
  Db& db = StoreInternal::Db(store);
  // ON CONFLICT DO NOTHING, then RETURNING: no row back means another watcher holds the claim.
  BATON_ASSIGN_OR_RETURN(
      Statement * ins,
      db.Prepare("INSERT INTO eval_jobs (run_id, step, attempt, job_id, state, reason, reported, "
                 "submitted_at, updated_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT (run_id, step, attempt) DO NOTHING RETURNING id"));
  ins->Bind(1, j.run_id)
      .Bind(2, j.step)
      .Bind(3, j.attempt)
      .Bind(4, j.job_id)
      .Bind(5, j.state)
      .Bind(6, j.reason)
      .Bind(7, int64_t{j.reported ? 1 : 0})
      .Bind(8, j.submitted_at)
      .Bind(9, j.updated_at)
      .Bind(10, j.ended_at);
  BATON_ASSIGN_OR_RETURN(const bool row, ins->Step());
  const int64_t id = row ? ins->Int(0) : 0;
  ins->Reset();
  if (!row) {
    return Status::InvalidArgument("run " + std::to_string(j.run_id) + " step " +
                                   std::to_string(j.step) + ": eval job attempt " +
                                   std::to_string(j.attempt) + " is recorded already");
  }
  return id;
}

Status UpdateEvalJob(Store& store, const EvalJobRecord& j) {
  BATON_ASSIGN_OR_RETURN(
      Statement * up,
      StoreInternal::Db(store).Prepare(
          "UPDATE eval_jobs SET job_id = ?, state = ?, reason = ?, updated_at = ?, ended_at = ? "
          "WHERE id = ?"));
  // A live row has no end; an ended one keeps its first end time.
  up->Bind(1, j.job_id).Bind(2, j.state).Bind(3, j.reason).Bind(4, j.updated_at).Bind(6, j.id);
  if (j.live()) {
    up->BindNull(5);
  } else {
    up->Bind(5, j.ended_at.value_or(j.updated_at));
  }
  return up->Run();
}

Status MarkEvalJobReported(Store& store, int64_t id, double now) {
  BATON_ASSIGN_OR_RETURN(Statement * up,
                         StoreInternal::Db(store).Prepare(
                             "UPDATE eval_jobs SET reported = 1, updated_at = ? WHERE id = ?"));
  return up->Bind(1, now).Bind(2, id).Run();
}

Result<std::vector<EvalJobRecord>> ListEvalJobs(Store& store, int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         StoreInternal::Db(store).Prepare(std::string("SELECT ") + kEvalJobColumns +
                                                          " WHERE run_id = ? ORDER BY step, "
                                                          "attempt"));
  s->Bind(1, run_id);
  return s->Collect<EvalJobRecord>(ReadEvalJob);
}

Result<std::vector<int64_t>> RunsWithLiveEvalJobs(Store& store) {
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(
                                            "SELECT DISTINCT run_id FROM eval_jobs WHERE state IN "
                                            "('pending', 'running') ORDER BY run_id"));
  return s->Collect<int64_t>([](const Statement& r) { return r.Int(0); });
}

}  // namespace baton
