// `baton cancel RUN [--json]`: mark the run folder cancelled, scancel the run's job, then mark the
// run CANCELLED. The folder's mark (RunFolder::CancelMark) comes first and atomically: the job's
// launcher gets scancel's TERM as it gets a preemption's warning signal, and the mark is how it
// knows not to requeue. If the mark cannot be written (exit 74) nothing is cancelled; if scancel
// fails (SLURM down) the mark is removed again and the store keeps the run as it was (exit 69):
// it never claims a cancel that did not happen, and a failed cancel changes nothing. Cancelling a
// CANCELLED run again repeats the mark and the scancel (a job that outlived an older cancel).
#include <filesystem>
#include <iostream>
#include <memory>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "schema/atomic_file.h"
#include "schema/clock.h"
#include "schema/events.h"
#include "schema/run_folder.h"

namespace baton {

namespace {

struct CancelOptions {
  std::string run;
  bool json = false;
};

// The mark, unless the run has no folder yet (a submit that failed half way).
Status WriteCancelMark(const RunRecord& run) {
  if (run.run_dir.empty()) return Status::Ok();
  std::error_code ec;
  if (!std::filesystem::is_directory(run.run_dir, ec)) return Status::Ok();
  const std::string mark = RunFolder{run.run_dir}.CancelMark();
  return WriteTextAtomic(mark, "cancelled by `baton cancel` at " +
                                   std::to_string(int64_t(UnixTimeNow())) + " (job " +
                                   (run.job_id.empty() ? "none" : run.job_id) + ")\n")
      .Annotate("writing the cancel mark");
}

int RunCancel(const CancelOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<RunRecord> run = (*store)->FindRun(o.run);
  if (!run.ok()) return ReportError(run.status());
  if (IsTerminal(run->status)) {
    // A CANCELLED run whose job is somehow still there is cancelled again: the mark and scancel
    // cost nothing when the job is long gone.
    const bool again = run->status == RunStatus::kCancelled && !run->job_id.empty();
    if (again) {
      if (Status st = WriteCancelMark(*run); !st.ok()) return ReportError(st);
      RealSlurmClient slurm;
      if (Status st = slurm.Cancel(run->job_id); !st.ok()) return ReportError(st);
    }
    if (o.json) {
      std::cout << nlohmann::json{{"run_id", run->id},
                                  {"status", RunStatusName(run->status)},
                                  {"changed", false}}
                       .dump()
                << "\n";
    } else {
      std::cout << "run " << run->id << " (" << run->name << ") is already "
                << RunStatusName(run->status)
                << (again ? " (scancel " + run->job_id + " repeated)" : "") << "\n";
    }
    return 0;
  }
  if (Status st = WriteCancelMark(*run); !st.ok()) return ReportError(st);
  if (!run->job_id.empty()) {
    RealSlurmClient slurm;
    if (Status st = slurm.Cancel(run->job_id); !st.ok()) {
      // No cancel happened: the mark goes too, so a later preemption of the job still requeues.
      std::error_code ec;
      std::filesystem::remove(RunFolder{run->run_dir}.CancelMark(), ec);
      return ReportError(st);
    }
  }
  Status st = (*store)->Write([&] {
    return (*store)->SetRunStatusInTx(run->id, RunStatus::kCancelled, "cancelled by user",
                                      UnixTimeNow());
  });
  if (!st.ok()) return ReportError(st);
  if (o.json) {
    std::cout << nlohmann::json{{"run_id", run->id},
                                {"job_id", run->job_id},
                                {"status", "CANCELLED"},
                                {"changed", true}}
                     .dump()
              << "\n";
  } else {
    std::cout << "run " << run->id << " (" << run->name << ") cancelled"
              << (run->job_id.empty() ? "" : " (scancel " + run->job_id + ")") << "\n";
  }
  return 0;
}

}  // namespace

void AddCancelCommand(CLI::App& app, int* rc) {
  auto o = std::make_shared<CancelOptions>();
  CLI::App* cmd = app.add_subcommand("cancel", "Cancel a run (scancel its job)");
  cmd->add_option("run", o->run, "Run id or name")->required();
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o, rc] { *rc = RunCancel(*o); });
}

}  // namespace baton
