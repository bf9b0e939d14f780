// A failed eval job as an alert: when a checkpoint's eval job failed its retry too (eval.mode
// job, orchestrator/reconcile/eval_job_pass.h), the run gets an `eval_failed` incident and every
// sink subscribed to that kind gets the message through the outbox (alert_pass.h).
//
// The eval-job pass cannot depend on the alerts unit; it calls the hook this file builds. watch
// and serve give it to their sync pass. Thread-compatible, like the Store it is given.
#pragma once

#include "orchestrator/reconcile/eval_job_pass.h"
#include "schema/alerts_config.h"

namespace baton {

// Records the failure of `job` (the last attempt of its checkpoint) of `run` as a final
// `eval_failed` incident, keyed by the run's newest attempt: the first checkpoint that fails in
// an attempt alerts, later ones in that attempt count as occurrences of it.
[[nodiscard]] Status RaiseEvalFailed(Store& store, const AlertsSection& lab, const RunRecord& run,
                                     const EvalJobRecord& job, double now);

// An EvalFailureHook over RaiseEvalFailed with `lab`, which must outlive it.
EvalFailureHook EvalFailedHook(const AlertsSection& lab);

}  // namespace baton
