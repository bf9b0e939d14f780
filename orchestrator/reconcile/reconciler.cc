#include "orchestrator/reconcile/reconciler.h"

#include <filesystem>

#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/reconcile/hold_release.h"
#include "orchestrator/reconcile/slurm_state_kind.h"
#include "orchestrator/slurm/job_state.h"
#include "schema/event_records.h"

namespace baton {

namespace {

std::string StepText(const AttemptRecord* a) {
  return a && a->last_step ? std::to_string(*a->last_step) : std::string("0");
}

// A job that ended with its run folder gone (a sweep member's folder deleted, a run folder moved)
// says so first: the launcher could not even start, and nothing else will explain it.
std::string WithFolderGone(std::string reason, const RunRecord& run) {
  std::error_code ec;
  if (!run.run_dir.empty() && !std::filesystem::exists(run.run_dir, ec) && !ec)
    return "run folder " + run.run_dir + " is gone: " + reason;
  return reason;
}

// A FAILED run's reason ends with the trainer's own words when it left any (as ingest does), so
// `baton ls` and the runs page say why without a click.
std::string WithTrainerMessage(std::string reason, const AttemptRecord* a) {
  if (a && !a->trainer_message.empty()) reason += ": " + a->trainer_message;
  return reason;
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

  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    // Re-read inside the write transaction: ingest or `baton cancel` may have moved it.
    BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(run_in.id));
    if (IsTerminal(run.status)) return Status::Ok();
    BATON_ASSIGN_OR_RETURN(std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
    AttemptRecord* last = attempts.empty() ? nullptr : &attempts.back();
    const bool reached_target = last && last->last_step && *last->last_step >= run.target_steps;

    auto set_status = [&](RunStatus status, const std::string& reason) -> Status {
      if (run.status == status && run.reason == reason) return Status::Ok();
      if (changes) {
        changes->push_back("run " + std::to_string(run.id) + ": " + Name(run.status) + " -> " +
                           Name(status) + (reason.empty() ? "" : " (" + reason + ")"));
      }
      return store.SetActiveRunStatusInTx(run.id, status, reason, now);
    };
    // Closes an attempt the launcher could not close itself.
    auto close_attempt = [&](AttemptRecord& a, const std::string& state,
                             AttemptEndReason why) -> Status {
      const std::string reason = Name(why);
      // SLURM's own account (Reason, ExitCode) when the job it describes is this attempt's
      // start; an earlier restart's was not recorded (SLURM keeps only the latest).
      const bool described = job && job->job_id == a.job_id && job->restarts == a.restart_count;
      const std::string slurm_reason = described ? job->reason : a.slurm_reason;
      const std::string slurm_exit = described ? job->exit_code : a.slurm_exit_code;
      if (!a.action.empty() || !a.end_reason.empty()) {
        if (a.slurm_state == state && a.slurm_reason == slurm_reason &&
            a.slurm_exit_code == slurm_exit)
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
                           std::to_string(a.restart_count) + " ended: " + reason + " (SLURM " +
                           state + ")");
      }
      return store.UpdateAttemptInTx(a);
    };

    if (!job.has_value()) {
      if (last && last->action == Name(ExitAction::kDone))
        return set_status(RunStatus::kCompleted, "");
      if (reached_target) return set_status(RunStatus::kCompleted, "");
      if (last && last->action.empty() && last->end_reason.empty()) {
        BATON_RETURN_IF_ERROR(
            close_attempt(*last, Name(JobState::kUnknown), AttemptEndReason::kLost));
      }
      return set_status(
          RunStatus::kFailed,
          WithTrainerMessage("SLURM job " + run.job_id + " is gone and the run stopped at step " +
                                 StepText(last) + " of " + std::to_string(run.target_steps),
                             last));
    }
    const JobInfo& j = *job;

    // Attempts of earlier starts of this job that never wrote attempt_end were requeued by
    // SLURM itself (preemption past the grace time, node failure with --requeue).
    for (AttemptRecord& a : attempts) {
      if (a.job_id == j.job_id && a.restart_count < j.restarts) {
        BATON_RETURN_IF_ERROR(
            close_attempt(a, Name(JobState::kRequeued), AttemptEndReason::kPreempted));
      }
    }
    AttemptRecord* current =
        (last && last->job_id == j.job_id && last->restart_count == j.restarts) ? last : nullptr;

    const std::string& s = j.state;
    const JobState state = ParseJobState(s);
    if (AwaitsStart(state) || state == JobState::kSuspended) {
      if (attempts.empty()) return set_status(RunStatus::kPending, "");
      return set_status(RunStatus::kRequeued,
                        run.status == RunStatus::kRequeued ? run.reason : "requeued");
    }
    if (IsStartUnderWay(state)) {
      if (current && current->slurm_state != s) {
        current->slurm_state = s;
        BATON_RETURN_IF_ERROR(store.UpdateAttemptInTx(*current));
      }
      return set_status(RunStatus::kRunning, "");
    }
    if (state == JobState::kCompleting) return Status::Ok();  // wait for the final state
    if (state == JobState::kPreempted || state == JobState::kNodeFail) {
      const AttemptEndReason why = state == JobState::kNodeFail ? AttemptEndReason::kNodeFailure
                                                                : AttemptEndReason::kPreempted;
      if (current) BATON_RETURN_IF_ERROR(close_attempt(*current, s, why));
      return set_status(RunStatus::kRequeued, Name(why));
    }
    if (state == JobState::kCompleted) {
      if (current)
        BATON_RETURN_IF_ERROR(close_attempt(
            *current, s,
            reached_target ? AttemptEndReason::kCompleted : AttemptEndReason::kCrashed));
      if ((last && last->action == Name(ExitAction::kDone)) || reached_target) {
        return set_status(RunStatus::kCompleted, "");
      }
      return set_status(
          RunStatus::kFailed,
          WithFolderGone(WithTrainerMessage("job " + j.job_id + " ended at step " + StepText(last) +
                                                " of " + std::to_string(run.target_steps),
                                            last),
                         run));
    }
    if (state == JobState::kCancelled) {
      if (current) BATON_RETURN_IF_ERROR(close_attempt(*current, s, AttemptEndReason::kCancelled));
      return set_status(RunStatus::kCancelled, "cancelled in SLURM");
    }
    if (state == JobState::kTimeout) {
      if (current) BATON_RETURN_IF_ERROR(close_attempt(*current, s, AttemptEndReason::kTimeout));
      return set_status(
          RunStatus::kFailed,
          WithTrainerMessage("job " + j.job_id + " hit its time limit at step " + StepText(last),
                             last));
    }
    if (IsFailedEnd(state)) {
      if (current) {
        BATON_RETURN_IF_ERROR(close_attempt(*current, s,
                                            state == JobState::kBootFail
                                                ? AttemptEndReason::kNodeFailure
                                                : AttemptEndReason::kCrashed));
      }
      if (last && last->action == Name(ExitAction::kFail))
        return Status::Ok();  // ingest has the reason
      return set_status(
          RunStatus::kFailed,
          WithFolderGone(WithTrainerMessage("job " + j.job_id + " " + s + " (exit code " +
                                                j.exit_code + ") at step " + StepText(last),
                                            last),
                         run));
    }
    return Status::Ok();  // a state we do not act on
  }));
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
