// The node ledger's refusals as alerts: when the exclusion cap keeps a bad node in a job's list
// ("cannot exclude: job would not fit ..."), the run gets a `cannot_exclude` incident and every
// sink subscribed to that kind gets the message through the outbox (alert_pass.h), so an admin
// hears that a node baton would have excluded is still in use.
//
// The ledger (orchestrator/nodes/node_ledger.h) cannot depend on the alerts unit; it calls the
// hook this file builds. watch and serve give it to their sync pass, submit calls it for the
// refusals of a new job. Thread-compatible, like the Store it is given.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/nodes/node_ledger.h"
#include "schema/alerts_config.h"

namespace baton {

// Records the refusal of `host` for `job_id` of `run` as a final `cannot_exclude` incident (one
// per run and attempt) and queues its message for the subscribed sinks of `lab` and of the run's
// own alerts section.
[[nodiscard]] Status RaiseCannotExclude(Store& store, const AlertsSection& lab,
                                        const RunRecord& run, const std::string& job_id,
                                        const std::string& host, const std::string& message,
                                        double now);

// `baton submit` / `baton resume`: the refusals of the new job `job_id` of run `run_id`, each
// recorded once (RecordExclusionRefusal) with a `cannot_exclude` incident for `lab`'s sinks.
[[nodiscard]] Status RecordNewJobRefusals(Store& store, const AlertsSection& lab, int64_t run_id,
                                          const std::string& job_id,
                                          const std::vector<ExclusionPlan::Refused>& refused,
                                          double now);
// The same with the lab's rules (LoadLabAlertRules).
[[nodiscard]] Status RecordNewJobRefusals(Store& store, int64_t run_id, const std::string& job_id,
                                          const std::vector<ExclusionPlan::Refused>& refused,
                                          double now);

// A NodeRefusalHook over RaiseCannotExclude with `lab`, which must outlive it.
NodeRefusalHook CannotExcludeHook(const AlertsSection& lab);

}  // namespace baton
