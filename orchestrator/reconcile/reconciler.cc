#include "orchestrator/reconcile/reconciler.h"

#include <filesystem>

#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/reconcile/hold_release.h"
#include "orchestrator/reconcile/reconcile_verdict.h"
#include "orchestrator/reconcile/slurm_state_kind.h"
#include "schema/event_records.h"

namespace baton {

namespace {

// A job that ended with its run folder gone (a sweep member's folder deleted, a run folder moved)
// says so first: the launcher could not even start, and nothing else will explain it.
std::string WithFolderGone(std::string reason, const RunRecord& run) {
  std::error_code ec;
  if (!run.run_dir.empty() && !std::filesystem::exists(run.run_dir, ec) && !ec)
    return "run folder " + run.run_dir + " is gone: " + reason;
  return reason;
}

// The run's status and reason, written (and told) only when they change.
Status SetStatusInTx(Store& store, const RunRecord& run, RunStatus status,
                     const std::string& reason, double now, std::vector<std::string>* changes) {
  if (run.status == status && run.reason == reason) return Status::Ok();
  if (changes) {
    changes->push_back("run " + std::to_string(run.id) + ": " + Name(run.status) + " -> " +
                       Name(status) + (reason.empty() ? "" : " (" + reason + ")"));
  }
  return store.SetActiveRunStatusInTx(run.id, status, reason, now);
}

// Closes an attempt the launcher could not close itself; one already ended only takes SLURM's
// state and account.
Status CloseAttemptInTx(Store& store, const RunRecord& run, AttemptRecord& a,
                        const AttemptClose& close, const std::optional<JobInfo>& job, double now,
                        std::vector<std::string>* changes) {
  const std::string& state = close.slurm_state;
  const std::string reason = Name(close.reason);
  // SLURM's own account (Reason, ExitCode) when the job it describes is this attempt's start; an
  // earlier restart's was not recorded (SLURM keeps only the latest).
  const bool described = job && job->job_id == a.job_id && job->restarts == a.restart_count;
  const std::string slurm_reason = described ? job->reason : a.slurm_reason;
  const std::string slurm_exit = described ? job->exit_code : a.slurm_exit_code;
  if (!a.action.empty() || !a.end_reason.empty()) {
    if (a.slurm_state == state && a.slurm_reason == slurm_reason && a.slurm_exit_code == slurm_exit)
      return Status::Ok();
    a.slurm_state = state;
    a.slurm_reason = slurm_reason;
    a.slurm_exit_code = slurm_exit;
    return store.UpdateAttemptInTx(a);
  }
  a.slurm_state = state;
  a.slurm_reason = slurm_reason;
  a.slurm_exit_code = slurm_exit;
  a.end_reason = reason;
  if (!a.ended_at) a.ended_at = now;
  if (changes) {
    changes->push_back("run " + std::to_string(run.id) + ": attempt " + a.job_id + "." +
                       std::to_string(a.restart_count) + " ended: " + reason + " (SLURM " + state +
                       ")");
  }
  return store.UpdateAttemptInTx(a);
}

// Inside the write transaction: the run and its attempts re-read (ingest or `baton cancel` may
// have moved them since the caller read the run), the verdict asked (reconcile_verdict.h), and
// applied.
Status ReconcileActiveRunInTx(Store& store, int64_t run_id, const std::optional<JobInfo>& job,
                              double now, std::vector<std::string>* changes) {
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(run_id));
  if (IsTerminal(run.status)) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
  const ReconcileVerdict verdict = DecideReconcile(run, job, attempts);
  for (const AttemptClose& close : verdict.close) {
    BATON_RETURN_IF_ERROR(
        CloseAttemptInTx(store, run, attempts[close.attempt], close, job, now, changes));
  }
  if (verdict.record_state) {
    AttemptRecord& current = attempts[*verdict.record_state];
    if (current.slurm_state != job->state) {
      current.slurm_state = job->state;
      BATON_RETURN_IF_ERROR(store.UpdateAttemptInTx(current));
    }
  }
  if (!verdict.status) return Status::Ok();
  return SetStatusInTx(
      store, run, *verdict.status,
      verdict.reason_names_gone_folder ? WithFolderGone(verdict.reason, run) : verdict.reason, now,
      changes);
}

// A finished run's last attempt whose recorded SLURM state is not final yet (slurm_state_kind.h):
// SLURM's final state of that start, once SLURM reports it, within kSlurmFinalStateFollowUpS of
// the run's end. The run's status and the attempt's end stay as ingest or reconcile left them.
Status FollowUpFinalState(Store& store, const RunRecord& run, const std::optional<JobInfo>& job,
                          double now, std::vector<std::string>* changes) {
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
  if (attempts.empty() || IsFinalSlurmState(attempts.back().slurm_state)) return Status::Ok();
  const AttemptRecord& last = attempts.back();
  const double ended = last.ended_at.value_or(run.updated_at);
  if (last.job_id != run.job_id || now - ended > kSlurmFinalStateFollowUpS) return Status::Ok();
  // Gone (aged out of scontrol), a later start, or not over yet (COMPLETING): nothing to learn
  // now; what was recorded stays, and says it is only the state last seen.
  if (!job || job->job_id != last.job_id || job->restarts != last.restart_count ||
      !IsFinalSlurmState(job->state))
    return Status::Ok();
  return store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(AttemptRecord a, store.GetAttempt(last.id));
    if (IsFinalSlurmState(a.slurm_state)) return Status::Ok();
    if (changes) {
      changes->push_back("run " + std::to_string(run.id) + ": attempt " + a.job_id + "." +
                         std::to_string(a.restart_count) + ": SLURM's final state " + job->state +
                         (a.slurm_state.empty() ? "" : " (last seen " + a.slurm_state + ")"));
    }
    a.slurm_state = job->state;
    a.slurm_reason = job->reason;
    a.slurm_exit_code = job->exit_code;
    return store.UpdateAttemptInTx(a);
  });
}

}  // namespace

Result<bool> WantsSlurmFinalState(Store& store, const RunRecord& run, double now) {
  if (run.job_id.empty()) return false;
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
  if (attempts.empty() || IsFinalSlurmState(attempts.back().slurm_state)) return false;
  const AttemptRecord& last = attempts.back();
  return last.job_id == run.job_id &&
         now - last.ended_at.value_or(run.updated_at) <= kSlurmFinalStateFollowUpS;
}

Status ReconcileRun(Store& store, SlurmClient& slurm, const RunRecord& run, double now,
                    std::vector<std::string>* changes, const ReconcileOptions& options) {
  if (run.job_id.empty()) return Status::Ok();
  if (IsTerminal(run.status)) {
    BATON_ASSIGN_OR_RETURN(const bool ask, WantsSlurmFinalState(store, run, now));
    if (!ask) return Status::Ok();  // nothing SLURM could still tell
  }
  BATON_ASSIGN_OR_RETURN(const std::optional<JobInfo> job, slurm.GetJob(run.job_id));
  return ReconcileRunWith(store, slurm, run, job, now, changes, options);
}

Status ReconcileRunWith(Store& store, SlurmClient& slurm, const RunRecord& run_in,
                        const std::optional<JobInfo>& job, double now,
                        std::vector<std::string>* changes, const ReconcileOptions& options) {
  if (run_in.job_id.empty()) return Status::Ok();
  if (IsTerminal(run_in.status)) return FollowUpFinalState(store, run_in, job, now, changes);
  if (job && options.acting_user) {
    if (const std::optional<std::string> why = NotYours(*options.acting_user, *job)) {
      if (changes) changes->push_back("run " + std::to_string(run_in.id) + ": " + *why);
      return Status::Ok();
    }
  }
  BATON_RETURN_IF_ERROR(store.Write(
      [&]() -> Status { return ReconcileActiveRunInTx(store, run_in.id, job, now, changes); }));
  // Outside the transaction: scontrol must not run while this holds the store's write lock.
  // The exclusions go first: once the hold ends the job may start at once.
  if (options.node_policy != nullptr && job && HeldAfterRequeue(*job)) {
    BATON_RETURN_IF_ERROR(ApplyNodeExclusions(store, slurm, run_in, *job, *options.node_policy, now,
                                              changes, options.node_refusal));
  }
  if (options.release_requeue_holds && job && HeldAfterRequeue(*job)) {
    return ReleaseRequeueHold(store, slurm, run_in, *job, now, changes);
  }
  return Status::Ok();
}

std::vector<std::string> JobIdsOf(const std::vector<RunRecord>& runs) {
  std::vector<std::string> ids;
  for (const RunRecord& run : runs) {
    if (!run.job_id.empty()) ids.push_back(run.job_id);
  }
  return ids;
}

Status ReconcileRuns(Store& store, SlurmClient& slurm, const std::vector<RunRecord>& runs,
                     double now, std::vector<std::string>* changes,
                     const ReconcileOptions& options) {
  const std::vector<std::string> ids = JobIdsOf(runs);
  if (ids.empty()) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const JobTable jobs, slurm.GetJobs(ids));
  return ReconcileRunsWith(store, slurm, runs, jobs, now, changes, options);
}

Status ReconcileRunsWith(Store& store, SlurmClient& slurm, const std::vector<RunRecord>& runs,
                         const JobTable& jobs, double now, std::vector<std::string>* changes,
                         const ReconcileOptions& options) {
  Status first;
  for (const RunRecord& run : runs) {
    const auto it = jobs.find(run.job_id);
    const std::optional<JobInfo> job =
        it == jobs.end() ? std::nullopt : std::optional<JobInfo>(it->second);
    Status st = ReconcileRunWith(store, slurm, run, job, now, changes, options);
    if (st.code() == Code::kUnavailable) return st;
    if (!st.ok() && first.ok()) first = st.Annotate("run " + std::to_string(run.id));
  }
  return first;
}

}  // namespace baton
