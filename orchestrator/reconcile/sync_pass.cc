#include "orchestrator/reconcile/sync_pass.h"

#include <set>

#include "orchestrator/ingest/eval_file_ingest.h"
#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/reconcile/eval_job_pass.h"
#include "orchestrator/reconcile/reconciler.h"
#include "orchestrator/reconcile/slurm_state_kind.h"
#include "orchestrator/store/time_bucket_store.h"

namespace baton {

namespace {

// The run's events, then its evals/ files (eval_file_ingest.h: in job mode the only record of
// an eval). A live run's time buckets wait for the pass's one refresh after reconcile.
Result<IngestStats> IngestRunAndEvals(Store& store, const RunRecord& run) {
  IngestOptions options;
  options.refresh_time_buckets = IsTerminal(run.status);
  BATON_ASSIGN_OR_RETURN(IngestStats stats, IngestRun(store, run, options));
  BATON_ASSIGN_OR_RETURN(const IngestStats evals, IngestEvalFiles(store, run));
  stats.Add(evals);
  return stats;
}

// The eval results of runs that ended lately and are not among `given` (SyncOptions::
// follow_up_ended_runs).
Status IngestEndedRunsEvals(Store& store, const std::vector<RunRecord>& given,
                            const SyncOptions& options, double now, SyncReport* report) {
  BATON_ASSIGN_OR_RETURN(const std::vector<RunRecord> ended,
                         store.ListRunsEndedSince(now - kEvalFollowUpS));
  std::set<int64_t> given_ids;
  for (const RunRecord& run : given) given_ids.insert(run.id);
  for (const RunRecord& run : ended) {
    if (given_ids.count(run.id) > 0) continue;
    Result<IngestStats> evals = IngestEvalFiles(store, run);
    if (evals.ok()) {
      report->ingested.Add(*evals);
    } else if (options.continue_after_ingest_error) {
      report->ingested.warnings.push_back("eval results of run " + std::to_string(run.id) + ": " +
                                          evals.status().ToString());
    } else {
      return evals.status().Annotate("eval results of run " + std::to_string(run.id));
    }
  }
  return Status::Ok();
}

// Every given run's events and eval results, then (watch, serve) the eval results of the runs
// that ended lately.
Status IngestRuns(Store& store, const std::vector<RunRecord>& runs, const SyncOptions& options,
                  double now, SyncReport* report) {
  for (const RunRecord& run : runs) {
    Result<IngestStats> ingested = IngestRunAndEvals(store, run);
    if (ingested.ok()) {
      report->ingested.Add(*ingested);
    } else if (options.continue_after_ingest_error) {
      report->ingested.warnings.push_back("ingesting run " + std::to_string(run.id) + ": " +
                                          ingested.status().ToString());
    } else {
      return ingested.status().Annotate("ingesting run " + std::to_string(run.id));
    }
  }
  if (!options.follow_up_ended_runs) return Status::Ok();
  return IngestEndedRunsEvals(store, runs, options, now, report);
}

// The runs that ended lately (and are not among `runs`) still waiting for SLURM's final state.
Result<std::vector<RunRecord>> EndedRunsToAsk(Store& store, const std::vector<RunRecord>& runs,
                                              double now) {
  BATON_ASSIGN_OR_RETURN(std::vector<RunRecord> ended,
                         store.ListRunsEndedSince(now - kSlurmFinalStateFollowUpS));
  std::set<int64_t> given;
  for (const RunRecord& run : runs) given.insert(run.id);
  std::vector<RunRecord> asked;
  for (RunRecord& r : ended) {
    if (given.count(r.id) > 0) continue;
    BATON_ASSIGN_OR_RETURN(const bool ask, WantsSlurmFinalState(store, r, now));
    if (ask) asked.push_back(std::move(r));
  }
  return asked;
}

// The eval-job pass over the pass's runs, the lately ended ones and those with a live eval job.
Status RunEvalJobs(Store& store, SlurmClient& slurm, const std::vector<RunRecord>& runs,
                   const EvalJobOptions& options, double now, std::vector<std::string>* changes) {
  BATON_ASSIGN_OR_RETURN(const std::vector<RunRecord> all,
                         EvalJobRuns(store, runs, now - kSlurmFinalStateFollowUpS));
  return EvalJobPass(store, slurm, all, options, now, changes);
}

}  // namespace

Result<SyncReport> SyncRuns(Store& store, const std::vector<RunRecord>& runs,
                            const SyncOptions& options, double now) {
  SyncReport report;
  BATON_RETURN_IF_ERROR(IngestRuns(store, runs, options, now, &report));
  // Re-read: ingest may have ended a run (nothing left to ask SLURM) and the caller shows them.
  auto reread = [&]() -> Status {
    report.runs.clear();
    for (const RunRecord& run : runs) {
      BATON_ASSIGN_OR_RETURN(RunRecord fresh, store.GetRun(run.id));
      report.runs.push_back(std::move(fresh));
    }
    return Status::Ok();
  };
  BATON_RETURN_IF_ERROR(reread());
  // Where each run's time went, up to now: a live run's wall grows with it, and reconcile may
  // have closed an attempt or released a hold. A run that was over before the pass changes only
  // through its records, and ingest refreshed it when it applied any.
  auto refresh = [&]() -> Status {
    for (size_t i = 0; i < report.runs.size(); ++i) {
      const RunRecord& run = report.runs[i];
      if (IsTerminal(runs[i].status) && run.status == runs[i].status) {
        BATON_ASSIGN_OR_RETURN(const std::optional<RunTimeBuckets> stored,
                               ReadTimeBuckets(store, run.id));
        if (stored) continue;
      }
      BATON_RETURN_IF_ERROR(RefreshTimeBuckets(store, run, now));
    }
    return Status::Ok();
  };
  if (options.nodes != nullptr) {
    for (const RunRecord& run : report.runs) {
      BATON_RETURN_IF_ERROR(RecordRunIncidents(store, run, *options.nodes, now, &report.changes));
    }
    BATON_RETURN_IF_ERROR(JudgeNodes(store, options.nodes->policy, now, &report.changes));
  }
  if (options.slurm == nullptr) {
    BATON_RETURN_IF_ERROR(refresh());
    return report;
  }
  ReconcileOptions reconcile;
  reconcile.release_requeue_holds = options.release_requeue_holds;
  reconcile.acting_user = options.acting_user;
  if (options.nodes != nullptr) {
    reconcile.node_policy = &options.nodes->policy;
    reconcile.node_refusal = &options.nodes->on_refusal;
  }
  std::vector<RunRecord> ended;
  if (options.follow_up_ended_runs) {
    BATON_ASSIGN_OR_RETURN(ended, EndedRunsToAsk(store, runs, now));
  }
  // One question to SLURM for every job of the pass, the followed-up ones included.
  std::vector<std::string> ids = JobIdsOf(report.runs);
  for (const std::string& id : JobIdsOf(ended)) ids.push_back(id);
  Result<JobTable> jobs = ids.empty() ? Result<JobTable>(JobTable{}) : options.slurm->GetJobs(ids);
  if (!jobs.ok()) {
    report.reconcile = jobs.status();
  } else {
    report.reconcile = ReconcileRunsWith(store, *options.slurm, report.runs, *jobs, now,
                                         &report.changes, reconcile);
    if (report.reconcile.code() != Code::kUnavailable) {
      Status st = ReconcileRunsWith(store, *options.slurm, ended, *jobs, now, &report.changes);
      if (report.reconcile.ok()) report.reconcile = st;
    }
  }
  BATON_RETURN_IF_ERROR(reread());
  if (options.eval_jobs != nullptr && report.reconcile.code() != Code::kUnavailable) {
    report.eval_jobs =
        RunEvalJobs(store, *options.slurm, report.runs, *options.eval_jobs, now, &report.changes);
  }
  BATON_RETURN_IF_ERROR(refresh());
  return report;
}

}  // namespace baton
