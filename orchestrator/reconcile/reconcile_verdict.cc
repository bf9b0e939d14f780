#include "orchestrator/reconcile/reconcile_verdict.h"

#include "orchestrator/slurm/job_state.h"

namespace baton {

namespace {

std::string StepText(const AttemptRecord* a) {
  return a && a->last_step ? std::to_string(*a->last_step) : std::string("0");
}

// A FAILED run's reason ends with the trainer's own words when it left any (as ingest does), so
// `baton ls` and the runs page say why without a click.
std::string WithTrainerMessage(std::string reason, const AttemptRecord* a) {
  if (a && !a->trainer_message.empty()) reason += ": " + a->trainer_message;
  return reason;
}

ReconcileVerdict& SetStatus(ReconcileVerdict& v, RunStatus status, std::string reason = "",
                            bool names_gone_folder = false) {
  v.status = status;
  v.reason = std::move(reason);
  v.reason_names_gone_folder = names_gone_folder;
  return v;
}

// SLURM no longer knows the job: it aged out of the controller, or was never there.
ReconcileVerdict JobGone(const RunRecord& run, const std::vector<AttemptRecord>& attempts) {
  ReconcileVerdict v;
  const AttemptRecord* last = attempts.empty() ? nullptr : &attempts.back();
  const bool reached_target = last && last->last_step && *last->last_step >= run.target_steps;
  if ((last && last->action == Name(ExitAction::kDone)) || reached_target)
    return SetStatus(v, RunStatus::kCompleted);
  if (last && last->action.empty() && last->end_reason.empty())
    v.close.push_back({attempts.size() - 1, Name(JobState::kUnknown), AttemptEndReason::kLost});
  return SetStatus(
      v, RunStatus::kFailed,
      WithTrainerMessage("SLURM job " + run.job_id + " is gone and the run stopped at step " +
                             StepText(last) + " of " + std::to_string(run.target_steps),
                         last));
}

// The row of the job's state, after the earlier starts are closed into `v`; `current` is the
// index of the attempt of the job's present start, when the store has it.
ReconcileVerdict& ByJobState(ReconcileVerdict& v, const RunRecord& run, const JobInfo& j,
                             const std::vector<AttemptRecord>& attempts,
                             std::optional<size_t> current) {
  const AttemptRecord* last = attempts.empty() ? nullptr : &attempts.back();
  const bool reached_target = last && last->last_step && *last->last_step >= run.target_steps;
  const auto end_current = [&](AttemptEndReason why) {
    if (current) v.close.push_back({*current, j.state, why});
  };
  const JobState state = ParseJobState(j.state);
  if (AwaitsStart(state) || state == JobState::kSuspended) {
    if (attempts.empty()) return SetStatus(v, RunStatus::kPending);
    return SetStatus(v, RunStatus::kRequeued,
                     run.status == RunStatus::kRequeued ? run.reason : "requeued");
  }
  if (IsStartUnderWay(state)) {
    v.record_state = current;
    return SetStatus(v, RunStatus::kRunning);
  }
  if (state == JobState::kCompleting) return v;  // wait for the final state
  if (state == JobState::kPreempted || state == JobState::kNodeFail) {
    const AttemptEndReason why = state == JobState::kNodeFail ? AttemptEndReason::kNodeFailure
                                                              : AttemptEndReason::kPreempted;
    end_current(why);
    return SetStatus(v, RunStatus::kRequeued, Name(why));
  }
  if (state == JobState::kCompleted) {
    end_current(reached_target ? AttemptEndReason::kCompleted : AttemptEndReason::kCrashed);
    if ((last && last->action == Name(ExitAction::kDone)) || reached_target)
      return SetStatus(v, RunStatus::kCompleted);
    return SetStatus(v, RunStatus::kFailed,
                     WithTrainerMessage("job " + j.job_id + " ended at step " + StepText(last) +
                                            " of " + std::to_string(run.target_steps),
                                        last),
                     /*names_gone_folder=*/true);
  }
  if (state == JobState::kCancelled) {
    end_current(AttemptEndReason::kCancelled);
    return SetStatus(v, RunStatus::kCancelled, "cancelled in SLURM");
  }
  if (state == JobState::kTimeout) {
    end_current(AttemptEndReason::kTimeout);
    return SetStatus(
        v, RunStatus::kFailed,
        WithTrainerMessage("job " + j.job_id + " hit its time limit at step " + StepText(last),
                           last));
  }
  if (IsFailedEnd(state)) {
    end_current(state == JobState::kBootFail ? AttemptEndReason::kNodeFailure
                                             : AttemptEndReason::kCrashed);
    if (last && last->action == Name(ExitAction::kFail)) return v;  // ingest has the reason
    return SetStatus(v, RunStatus::kFailed,
                     WithTrainerMessage("job " + j.job_id + " " + j.state + " (exit code " +
                                            j.exit_code + ") at step " + StepText(last),
                                        last),
                     /*names_gone_folder=*/true);
  }
  return v;  // a state we do not act on
}

}  // namespace

ReconcileVerdict DecideReconcile(const RunRecord& run, const std::optional<JobInfo>& job,
                                 const std::vector<AttemptRecord>& attempts) {
  if (!job) return JobGone(run, attempts);
  ReconcileVerdict v;
  // Attempts of earlier starts of this job that never wrote attempt_end were requeued by SLURM
  // itself (preemption past the grace time, node failure with --requeue).
  for (size_t i = 0; i < attempts.size(); ++i) {
    if (attempts[i].job_id == job->job_id && attempts[i].restart_count < job->restarts)
      v.close.push_back({i, Name(JobState::kRequeued), AttemptEndReason::kPreempted});
  }
  std::optional<size_t> current;
  if (!attempts.empty() && attempts.back().job_id == job->job_id &&
      attempts.back().restart_count == job->restarts)
    current = attempts.size() - 1;
  return ByJobState(v, run, *job, attempts, current);
}

}  // namespace baton
