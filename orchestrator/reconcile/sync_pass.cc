#include "orchestrator/reconcile/sync_pass.h"

#include "orchestrator/reconcile/reconciler.h"

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
  if (options.slurm == nullptr) return report;
  report.reconcile = ReconcileRuns(store, *options.slurm, report.runs, now, &report.changes);
  BATON_RETURN_IF_ERROR(reread());
  return report;
}

}  // namespace baton
