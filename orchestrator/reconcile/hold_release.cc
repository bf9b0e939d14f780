#include "orchestrator/reconcile/hold_release.h"

#include <cstdio>

#include "orchestrator/slurm/job_state.h"
#include "schema/checkpoint_manifest.h"
#include "schema/event_records.h"
#include "schema/exit_codes.h"
#include "schema/run_config.h"

namespace baton {

namespace {

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

// The attempt ended as a clean preemption: the launcher requeued it after the trainer
// checkpointed on the signal and exited 75, and that checkpoint is committed: its event (written
// after the commit) is at the step the attempt stopped at, and the folder verifies as the next
// attempt's resume will verify it (VerifyCheckpoint with hashes, the check DecideResume makes):
// a damaged one would send that attempt back to an older checkpoint.
Result<bool> EndedCleanly(Store& store, const AttemptRecord& a) {
  // A node failed the preflight: no trainer ran, nothing was written; the resume is the one
  // this attempt would have made.
  if (a.action == Name(ExitAction::kRequeue) &&
      a.end_reason == Name(AttemptEndReason::kNodeUnhealthy) && a.ended_at)
    return true;
  if (a.action != Name(ExitAction::kRequeue) ||
      a.end_reason != Name(AttemptEndReason::kPreempted) || !a.ended_at ||
      a.trainer_exit_code != kExitRequeue || !a.last_step)
    return false;
  BATON_ASSIGN_OR_RETURN(const std::vector<CheckpointRecord> checkpoints,
                         store.ListCheckpoints(a.run_id));
  for (const CheckpointRecord& c : checkpoints) {
    if (c.valid && c.step == *a.last_step && VerifyCheckpoint(c.path, /*check_hashes=*/true).ok())
      return true;
  }
  return false;
}

}  // namespace

bool HeldAfterRequeue(const JobInfo& job) {
  const JobState state = ParseJobState(job.state);
  return (state == JobState::kPending || state == JobState::kRequeueHold) &&
         job.reason == "BeginTime";
}

Status ReleaseRequeueHold(Store& store, SlurmClient& slurm, const RunRecord& run_in,
                          const JobInfo& job, double now, std::vector<std::string>* changes) {
  if (!HeldAfterRequeue(job)) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(run_in.id));
  if (IsTerminal(run.status) || run.job_id != job.job_id) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
  if (attempts.empty()) return Status::Ok();
  for (const AttemptRecord& a : attempts) {
    if (!a.hold_release_error.empty()) return Status::Ok();  // refused once: wait out holds
  }
  const AttemptRecord& last = attempts.back();
  if (last.job_id != job.job_id || job.restarts != last.restart_count + 1 || last.hold_released_at)
    return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const bool clean, EndedCleanly(store, last));
  if (!clean) return Status::Ok();  // a crash or a kill: SLURM's hold stands
  RunConfigOptions parse;
  parse.check_filesystem = false;
  Result<RunConfig> config = ParseRunConfig(run.config, run.run_dir + "/run.yaml", parse);
  if (!config.ok() || !config->slurm.release_requeue_hold) return Status::Ok();
  const double since = now - *last.ended_at;
  if (since < config->slurm.release_hold_after_s) return Status::Ok();  // a later pass

  const std::string who = "run " + std::to_string(run.id) + ": job " + job.job_id;
  const Status released = slurm.ReleaseHold(job.job_id);
  if (released.code() == Code::kUnavailable) return released;
  return store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(AttemptRecord a, store.GetAttempt(last.id));
    if (a.hold_released_at || !a.hold_release_error.empty()) return Status::Ok();
    if (released.ok()) {
      a.hold_released_at = now;
      if (changes) {
        changes->push_back(who + ": requeue hold released (scontrol update JobId=" + job.job_id +
                           " StartTime=now), " + Seconds(since) + " after attempt " + a.job_id +
                           "." + std::to_string(a.restart_count) + " ended cleanly at step " +
                           std::to_string(*a.last_step));
      }
    } else {
      a.hold_release_error = released.message();
      if (changes) {
        changes->push_back(who + ": SLURM refused to release the requeue hold (" +
                           released.message() + "); the run waits out the hold");
      }
    }
    return store.UpdateAttemptInTx(a);
  });
}

}  // namespace baton
