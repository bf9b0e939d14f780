// The eval-job pass of eval.mode job (docs/eval.md, "Eval jobs"): the part of `baton watch`'s
// and `baton serve`'s sync pass (sync_pass.h) that evaluates a run's checkpoints in SLURM jobs
// of their own.
//
// For each run whose frozen config says eval.mode job: SLURM is asked about every live eval job
// of the pass at once; each live row takes its new state (done once evals/step_<N>.json exists,
// failed with SLURM's state, exit code and its log's last line when the job ended without it);
// then the run's decisions (eval_job_plan.h) are carried out. A checkpoint to submit is first
// hash-verified (VerifyCheckpoint); one that does not verify is recorded, with the file named,
// and never evaluated. A submission is claimed the way `baton submit` claims a run: in one write
// transaction that re-reads the rows, runs sbatch and records the job, so two watchers of one
// store (on several login nodes) never both submit; a job whose row could not be committed is
// cancelled. A second failure is reported through the failure hook (an incident for the alert
// sinks) and in `changes`. Nothing here waits for a job, so training never waits on an eval.
// Stateless; thread-compatible (one Store per thread).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "orchestrator/reconcile/job_permission.h"
#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/records.h"
#include "orchestrator/store/store.h"
#include "orchestrator/store/store_eval_jobs.h"
#include "schema/status.h"

namespace baton {

// Told about an eval job that failed its last attempt (once per checkpoint).
using EvalFailureHook = std::function<Status(Store&, const RunRecord&, const EvalJobRecord&)>;

struct EvalJobOptions {
  std::string trainer_bin;  // the baton-train the jobs run (absolute); '' submits none
  // Set: only the runs this user submitted get eval jobs (a job runs as whoever submits it, and
  // writes into the run folder); the others are left to their owner's watch.
  const ActingUser* acting_user = nullptr;
  // End the hold SLURM puts on a requeued eval job (hold_release.h's reason for training jobs).
  bool release_requeue_holds = false;
  EvalFailureHook on_failure;  // null: the failure is recorded and in `changes` only
};

// One pass over `runs` (those in eval.mode job; the others are skipped) at Unix time `now`; one
// line per submission, state change and report into `changes`. Fails on a store error, or with
// kUnavailable once SLURM cannot be reached (what was done before stays done). A run whose
// config cannot be read is a line in `changes`, and the other runs still go on.
[[nodiscard]] Status EvalJobPass(Store& store, SlurmClient& slurm,
                                 const std::vector<RunRecord>& runs, const EvalJobOptions& options,
                                 double now, std::vector<std::string>* changes);

// The runs the sync pass hands the eval-job pass: `runs`, those that ended since `ended_since`
// (their last checkpoints still get evaluated) and those with a live eval job, each once.
[[nodiscard]] Result<std::vector<RunRecord>> EvalJobRuns(Store& store,
                                                         const std::vector<RunRecord>& runs,
                                                         double ended_since);

}  // namespace baton
