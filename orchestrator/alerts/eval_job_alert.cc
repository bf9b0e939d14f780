#include "orchestrator/alerts/eval_job_alert.h"

#include "orchestrator/alerts/alert_pass.h"
#include "schema/clock.h"

namespace baton {

Status RaiseEvalFailed(Store& store, const AlertsSection& lab, const RunRecord& run,
                       const EvalJobRecord& job, double now) {
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
  IncidentRecord seen;
  seen.run_id = run.id;
  seen.kind = "eval_failed";
  if (!attempts.empty()) {
    const AttemptRecord& a = attempts.back();
    seen.first_attempt_id = seen.last_attempt_id = a.id;
    seen.attempt_label =
        a.job_id + "." + std::to_string(a.restart_count) + "." + std::to_string(a.in_job_seq);
  }
  // Nothing follows it: the checkpoint is not evaluated again.
  seen.outcome = "final";
  seen.step = job.step;
  seen.cause = "the eval of checkpoint step " + std::to_string(job.step) + " failed " +
               std::to_string(job.attempt) + " times";
  seen.excerpt = "eval job " + job.job_id + ": " + job.reason;
  if (seen.excerpt.size() > 2048) seen.excerpt.resize(2048);
  return RaiseIncident(store, seen, lab, now).status();
}

EvalFailureHook EvalFailedHook(const AlertsSection& lab) {
  return [&lab](Store& store, const RunRecord& run, const EvalJobRecord& job) {
    return RaiseEvalFailed(store, lab, run, job, UnixTimeNow());
  };
}

}  // namespace baton
