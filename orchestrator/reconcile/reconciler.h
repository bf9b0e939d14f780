// Reconcile: SLURM's view of a run's job (scontrol -o show job, one run for all jobs) into attempt
// end reasons and the run's status, for what the event files cannot say (a job killed before its
// launcher wrote attempt_end, a job cancelled from outside, a job SLURM requeued on its own, a job
// gone).
//
// Ingest first, then reconcile: events are the source of truth for what the trainer and the
// launcher did; reconcile only fills gaps and never moves a run out of a terminal status.
// The mapping (docs/orchestrator.md; row by row, with the reasons it writes, the pure verdict
// DecideReconcile in reconcile_verdict.h):
//   PENDING/REQUEUED/REQUEUE_HOLD  -> REQUEUED once the run had an attempt, else PENDING
//   RUNNING/CONFIGURING            -> RUNNING
//   PREEMPTED, NODE_FAIL           -> open attempt preempted / node_failure; run REQUEUED
//                                     (SLURM requeues: PreemptMode=REQUEUE and --requeue)
//   COMPLETED                      -> COMPLETED when the last attempt reached the target,
//                                     else FAILED naming the step it stopped at
//   FAILED/OUT_OF_MEMORY/BOOT_FAIL -> open attempt crashed; run FAILED
//   TIMEOUT                        -> open attempt timeout; run FAILED
//   CANCELLED                      -> open attempt cancelled; run CANCELLED
//   job unknown to SLURM           -> COMPLETED if the target was reached, else FAILED
// An attempt whose restart count is below the job's Restarts was requeued by SLURM: it is
// closed as preempted if it has no end yet.
// A terminal run is only followed up: when its last attempt's recorded SLURM state is not final
// (a RUNNING seen before the launcher's attempt_end, or none) and the run ended less than
// kSlurmFinalStateFollowUpS ago, SLURM's final state of that start is recorded once SLURM reports
// it (slurm_state_kind.h).
// With ReconcileOptions::release_requeue_holds, a job held after a clean preemption has its hold
// released (hold_release.h); with ReconcileOptions::node_policy, a job held after any requeue
// first gets the partition's excluded nodes in its ExcNodeList (orchestrator/nodes/node_ledger.h).
// Stateless functions; thread-compatible.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/reconcile/job_permission.h"
#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/store.h"

namespace baton {

struct NodePolicy;

struct ReconcileOptions {
  // `baton watch` and `baton serve`: end the requeue hold of a job after a clean preemption
  // (hold_release.h). The query commands only look.
  bool release_requeue_holds = false;
  // Set: a job of another user (job_permission.h) is left alone, neither reconciled nor released,
  // and a change line says so ("run N: skipped job J of user U: not yours").
  const ActingUser* acting_user = nullptr;
  // Set (`baton watch`, `baton serve`): before a requeue hold ends, the job's ExcNodeList gets
  // the excluded nodes of the run's partition (docs/nodes.md).
  const NodePolicy* node_policy = nullptr;
  // With node_policy: told of each refusal past the cap (node_ledger.h); may be null.
  const std::function<Status(Store&, const RunRecord&, const std::string&, const std::string&,
                             const std::string&)>* node_refusal = nullptr;
};

// What one batched query said (SlurmClient::GetJobs): job id -> SLURM's record; an id absent
// from it is a job SLURM no longer knows.
using JobTable = std::map<std::string, JobInfo>;

// Reconciles one run (follows up a terminal one, skips a run without a job), asking SLURM about
// its job. Appends a line per change to `changes` when given.
[[nodiscard]] Status ReconcileRun(Store& store, SlurmClient& slurm, const RunRecord& run,
                                  double now, std::vector<std::string>* changes = nullptr,
                                  const ReconcileOptions& options = {});

// The same with SLURM's record of the run's job already in hand (nullopt: SLURM does not know
// it); `slurm` is used only to release a requeue hold.
[[nodiscard]] Status ReconcileRunWith(Store& store, SlurmClient& slurm, const RunRecord& run,
                                      const std::optional<JobInfo>& job, double now,
                                      std::vector<std::string>* changes = nullptr,
                                      const ReconcileOptions& options = {});

// Whether a finished run's last start still waits for SLURM's final state (and is recent enough
// to ask): the follow-up above. False for a run without a job.
[[nodiscard]] Result<bool> WantsSlurmFinalState(Store& store, const RunRecord& run, double now);

// The job ids of `runs` that have one, in order.
std::vector<std::string> JobIdsOf(const std::vector<RunRecord>& runs);

// Each of `runs`, in order (terminal ones are followed up), after ONE GetJobs for all their jobs.
// SLURM not answering it is the kUnavailable returned (no run is reconciled); per-run errors are
// collected and the first returned, naming its run, after trying all runs.
[[nodiscard]] Status ReconcileRuns(Store& store, SlurmClient& slurm,
                                   const std::vector<RunRecord>& runs, double now,
                                   std::vector<std::string>* changes = nullptr,
                                   const ReconcileOptions& options = {});

// ReconcileRuns with the batched answer already in hand. Stops at the first kUnavailable (a hold
// release that could not reach SLURM).
[[nodiscard]] Status ReconcileRunsWith(Store& store, SlurmClient& slurm,
                                       const std::vector<RunRecord>& runs, const JobTable& jobs,
                                       double now, std::vector<std::string>* changes = nullptr,
                                       const ReconcileOptions& options = {});

}  // namespace baton
