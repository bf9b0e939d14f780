#include "orchestrator/alerts/node_refusal_alert.h"

#include "orchestrator/alerts/alert_pass.h"
#include "schema/clock.h"

namespace baton {

Status RaiseCannotExclude(Store& store, const AlertsSection& lab, const RunRecord& run,
                          const std::string& job_id, const std::string& host,
                          const std::string& message, double now) {
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run.id));
  IncidentRecord seen;
  seen.run_id = run.id;
  seen.kind = "cannot_exclude";
  // The newest attempt of the job is the one that keeps the node; none yet for a new job.
  for (const AttemptRecord& a : attempts) {
    if (a.job_id != job_id) continue;
    seen.first_attempt_id = seen.last_attempt_id = a.id;
    seen.attempt_label =
        a.job_id + "." + std::to_string(a.restart_count) + "." + std::to_string(a.in_job_seq);
  }
  // Nothing follows it: the job runs with the node, and the next refusal is its own incident.
  seen.outcome = "final";
  seen.cause = "node " + host + ": " + message;
  seen.node = host;
  seen.excerpt = "baton nodes: " + host + " is excluded on partition " +
                 (run.partition.empty() ? "(default)" : run.partition) + " but stays in job " +
                 job_id + "'s node list";
  return RaiseIncident(store, seen, lab, now).status();
}

Status RecordNewJobRefusals(Store& store, const AlertsSection& lab, int64_t run_id,
                            const std::string& job_id,
                            const std::vector<ExclusionPlan::Refused>& refused, double now) {
  if (refused.empty()) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(run_id));
  const NodeRefusalHook hook = CannotExcludeHook(lab);
  for (const ExclusionPlan::Refused& r : refused) {
    BATON_RETURN_IF_ERROR(RecordExclusionRefusal(store, run, job_id, r, now, &hook, nullptr));
  }
  return Status::Ok();
}

Status RecordNewJobRefusals(Store& store, int64_t run_id, const std::string& job_id,
                            const std::vector<ExclusionPlan::Refused>& refused, double now) {
  if (refused.empty()) return Status::Ok();
  BATON_ASSIGN_OR_RETURN(const AlertsSection lab, LoadLabAlertRules());
  return RecordNewJobRefusals(store, lab, run_id, job_id, refused, now);
}

NodeRefusalHook CannotExcludeHook(const AlertsSection& lab) {
  return [&lab](Store& store, const RunRecord& run, const std::string& job_id,
                const std::string& host, const std::string& message) {
    return RaiseCannotExclude(store, lab, run, job_id, host, message, UnixTimeNow());
  };
}

}  // namespace baton
