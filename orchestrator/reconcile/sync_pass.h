// The sync pass: how baton brings run history up to date, the same for `baton watch`, the
// background loop of `baton serve` and the query commands (ls, show, attempts, checkpoints).
//
// Ingest first, then the node ledger when asked, then reconcile (reconciler.h says why). Every
// given run's event files are ingested, finished runs too (their last lines, attempt_end, may still
// be unread); then SLURM is asked about all their jobs in one batched query (SlurmClient::GetJobs:
// one command run, however many jobs), and each run still active is reconciled with that answer,
// in the order given (a finished one is only followed up for SLURM's final state, reconciler.h).
// SLURM being down stops asking it for the rest of the pass and is reported, not returned: what
// is already ingested is still worth showing. Then, when asked, the eval jobs of the runs in
// eval.mode job (eval_job_pass.h). Last, each run's time buckets are brought up to `now`
// (time_bucket_store.h): every run that is live or changed in the pass, or has none stored.
// Each run's eval results (evals/step_<N>.json, eval_file_ingest.h) are ingested after its events.
// Stateless; thread-compatible (one Store per thread).
#pragma once

#include <string>
#include <vector>

#include "orchestrator/ingest/event_ingester.h"
#include "orchestrator/reconcile/eval_job_pass.h"
#include "orchestrator/reconcile/job_permission.h"
#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

struct NodeLedgerConfig;

// How long after a run ended `baton watch` and `baton serve` still read its eval results: in job
// mode the last checkpoint's eval job runs after the training job, and may wait in the queue.
inline constexpr double kEvalFollowUpS = 24 * 3600;

struct SyncOptions {
  // Asked about each active run's job; null: ingest only (--no-sync, --no-reconcile).
  SlurmClient* slurm = nullptr;
  // A run whose events cannot be ingested ends the pass with that error (a command must not
  // answer from half its input), unless this is set: then it is a warning and the other runs
  // still sync (a server keeps serving what it has).
  bool continue_after_ingest_error = false;
  // `baton watch` and `baton serve`, which are given only the active runs: also follow up the
  // runs that ended in the last kSlurmFinalStateFollowUpS, for SLURM's final state of their last
  // start (reconciler.h), and read the eval results of the runs that ended in the last
  // kEvalFollowUpS. The query commands follow up only the runs they show.
  bool follow_up_ended_runs = false;
  // `baton watch` and `baton serve`: end a job's requeue hold after a clean preemption
  // (hold_release.h; the run's slurm.release_requeue_hold).
  bool release_requeue_holds = false;
  // Set: reconcile and the hold release leave other users' jobs alone (reconciler.h).
  const ActingUser* acting_user = nullptr;
  // Set (`baton watch`, `baton serve`): after ingest, the runs' node incidents go into the
  // ledger and every node is judged; reconcile then puts the excluded nodes into a held job's
  // ExcNodeList before its hold ends (orchestrator/nodes/node_ledger.h).
  const NodeLedgerConfig* nodes = nullptr;
  // Set (`baton watch`, `baton serve`): after reconcile, the runs in eval.mode job get their eval
  // jobs (eval_job_pass.h): the pass's runs, those ended in the last kSlurmFinalStateFollowUpS
  // and those with a live eval job.
  const EvalJobOptions* eval_jobs = nullptr;
};

struct SyncReport {
  std::vector<RunRecord> runs;  // the given runs as they are after the pass, in the same order
  // Summed over the runs. Its warnings: one per bad line, and with continue_after_ingest_error
  // one per run that could not be ingested ("ingesting run N: <error>").
  IngestStats ingested;
  std::vector<std::string> changes;  // one line per status or attempt change reconcile made
  // Why reconcile fell short, or ok: kUnavailable as soon as SLURM did not answer (later runs
  // were not asked), else the first run that failed, named (the others were still reconciled).
  Status reconcile;
  // Why the eval-job pass fell short (SLURM down, a store error), or ok: a warning, the next
  // pass tries again.
  Status eval_jobs;
};

// One pass over `runs` at Unix time `now`. Fails only on a store error (or an ingest error, see
// SyncOptions).
[[nodiscard]] Result<SyncReport> SyncRuns(Store& store, const std::vector<RunRecord>& runs,
                                          const SyncOptions& options, double now);

}  // namespace baton
