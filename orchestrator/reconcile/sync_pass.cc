#include "orchestrator/reconcile/sync_pass.h"

#include <algorithm>
#include <set>

#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/reconcile/reconciler.h"
#include "orchestrator/reconcile/slurm_state_kind.h"
#include "orchestrator/store/time_bucket_store.h"

namespace baton {

Result<SyncReport> SyncRuns(Store& store, const std::vector<RunRecord>& runs,
                            const SyncOptions& options, double now) {
  SyncReport report;
  for (const RunRecord& run : runs) {
    Result<IngestStats> ingested = IngestRun(store, run);
    if (ingested.ok()) {
      report.ingested.Add(*ingested);
    } else if (options.continue_after_ingest_error) {
      report.ingested.warnings.push_back("ingesting run " + std::to_string(run.id) + ": " +
                                         ingested.status().ToString());
    } else {
      return ingested.status().Annotate("ingesting run " + std::to_string(run.id));
    }
  }
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
  if (options.nodes != nullptr) reconcile.node_policy = &options.nodes->policy;
  report.reconcile =
      ReconcileRuns(store, *options.slurm, report.runs, now, &report.changes, reconcile);
  if (options.follow_up_ended_runs && report.reconcile.code() != Code::kUnavailable) {
    BATON_ASSIGN_OR_RETURN(std::vector<RunRecord> ended,
                           store.ListRunsEndedSince(now - kSlurmFinalStateFollowUpS));
    std::set<int64_t> given;
    for (const RunRecord& run : runs) given.insert(run.id);
    ended.erase(std::remove_if(ended.begin(), ended.end(),
                               [&](const RunRecord& r) { return given.count(r.id) > 0; }),
                ended.end());
    Status st = ReconcileRuns(store, *options.slurm, ended, now, &report.changes);
    if (report.reconcile.ok()) report.reconcile = st;
  }
  BATON_RETURN_IF_ERROR(reread());
  BATON_RETURN_IF_ERROR(refresh());
  return report;
}

}  // namespace baton
