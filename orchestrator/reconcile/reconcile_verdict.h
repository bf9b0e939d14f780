// DecideReconcile: what the sync pass does to an active run, from what SLURM says of the run's
// job and the attempts the store has (reconciler.h applies it; docs/orchestrator.md).
//
// First, whatever SLURM says: an attempt of an earlier start of the job (restart count below the
// job's Restarts) is closed as preempted with state REQUEUED; SLURM requeued it itself. Then the
// row of the job's state; "current" is the last attempt when it is the job's present start (same
// job id and restart count), and "step N" is the last attempt's last step (0 without one):
//   job unknown to SLURM    -> COMPLETED when the last attempt is done or reached the target;
//                              else the last attempt, if still open, lost (state UNKNOWN), and
//                              FAILED "SLURM job J is gone and the run stopped at step N of T"
//   PENDING/REQUEUED/REQUEUE_HOLD/REQUEUE_FED/SUSPENDED
//                           -> PENDING before any attempt, else REQUEUED keeping the reason of
//                              a run already REQUEUED ("requeued" otherwise)
//   RUNNING/CONFIGURING/RESIZING/SIGNALING/STAGE_OUT
//                           -> current records the state; RUNNING
//   COMPLETING              -> nothing more: the start's final state is still to come
//   PREEMPTED / NODE_FAIL   -> current preempted / node_failure; REQUEUED with that reason
//   COMPLETED               -> current completed when the target was reached, else crashed;
//                              COMPLETED when the last attempt is done or reached the target,
//                              else FAILED "job J ended at step N of T"
//   CANCELLED               -> current cancelled; CANCELLED "cancelled in SLURM"
//   TIMEOUT                 -> current timeout; FAILED "job J hit its time limit at step N"
//   FAILED/OUT_OF_MEMORY/DEADLINE / BOOT_FAIL
//                           -> current crashed / node_failure; FAILED "job J STATE (exit code
//                              E) at step N", unless the last attempt's action is fail (ingest
//                              has the reason)
//   any other state         -> nothing more
// A FAILED reason ends with the last attempt's trainer message (": MESSAGE") when it has one; the
// "ended at step" and "(exit code" ones also start with "run folder D is gone: " when the run's
// folder is (reason_names_gone_folder: the caller looks, so this stays free of the filesystem).
// An attempt already ended keeps its end and only takes SLURM's state; a status equal to the
// run's is no change. Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/records.h"
#include "schema/event_records.h"

namespace baton {

// One attempt to close (or, once ended, to give SLURM's state), by its index in the attempts.
struct AttemptClose {
  size_t attempt = 0;
  std::string slurm_state;  // the state it records: the job's, or REQUEUED / UNKNOWN
  AttemptEndReason reason = AttemptEndReason::kCrashed;  // its end reason while it has none
};

struct ReconcileVerdict {
  std::vector<AttemptClose> close;  // in this order, before the status
  // The attempt (index) of the start under way, which records the job's state.
  std::optional<size_t> record_state;
  std::optional<RunStatus> status;  // nullopt: the run's status stays
  std::string reason;               // with status
  bool reason_names_gone_folder = false;
};

// `job`: SLURM's record of run.job_id, nullopt when SLURM does not know it; `attempts`: the run's,
// in order. `run` is active (not terminal).
ReconcileVerdict DecideReconcile(const RunRecord& run, const std::optional<JobInfo>& job,
                                 const std::vector<AttemptRecord>& attempts);

}  // namespace baton
