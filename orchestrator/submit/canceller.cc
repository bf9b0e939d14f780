#include "orchestrator/submit/canceller.h"

#include <filesystem>

#include "schema/atomic_file.h"
#include "schema/run_folder.h"

namespace baton {

namespace {

// The mark, unless the run has no folder yet (a submit that failed half way).
Status WriteCancelMark(const RunRecord& run, const std::string& by, double now) {
  if (run.run_dir.empty()) return Status::Ok();
  std::error_code ec;
  if (!std::filesystem::is_directory(run.run_dir, ec)) return Status::Ok();
  const std::string mark = RunFolder{run.run_dir}.CancelMark();
  return WriteTextAtomic(mark, "cancelled by " + by + " at " + std::to_string(int64_t(now)) +
                                   " (job " + (run.job_id.empty() ? "none" : run.job_id) + ")\n")
      .Annotate("writing the cancel mark");
}

}  // namespace

Result<CancelRunResult> CancelRun(Store& store, SlurmClient& slurm, const std::string& id_or_name,
                                  const std::string& by, double now) {
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.FindRun(id_or_name));
  CancelRunResult out;
  out.run_id = run.id;
  out.name = run.name;
  out.status = Name(run.status);
  if (IsTerminal(run.status)) {
    // A CANCELLED run whose job is somehow still there is cancelled again: the mark and scancel
    // cost nothing when the job is long gone.
    out.repeated = run.status == RunStatus::kCancelled && !run.job_id.empty();
    if (out.repeated) {
      BATON_RETURN_IF_ERROR(WriteCancelMark(run, by, now));
      BATON_RETURN_IF_ERROR(slurm.Cancel(run.job_id));
      out.job_id = run.job_id;
    }
    return out;
  }
  BATON_RETURN_IF_ERROR(WriteCancelMark(run, by, now));
  if (!run.job_id.empty()) {
    if (Status st = slurm.Cancel(run.job_id); !st.ok()) {
      // No cancel happened: the mark goes too, so a later preemption of the job still requeues.
      std::error_code ec;
      std::filesystem::remove(RunFolder{run.run_dir}.CancelMark(), ec);
      return st;
    }
  }
  BATON_RETURN_IF_ERROR(store.Write([&] {
    return store.SetRunStatusInTx(run.id, RunStatus::kCancelled, "cancelled by user", now);
  }));
  out.job_id = run.job_id;
  out.status = Name(RunStatus::kCancelled);
  out.changed = true;
  return out;
}

}  // namespace baton
