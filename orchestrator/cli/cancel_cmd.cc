// `baton cancel RUN [--json]`: scancel the run's job, then mark the run CANCELLED. If scancel
// fails (SLURM down), the run is left as it was (exit 69): the store never claims a cancel
// that did not happen.
#include <iostream>
#include <memory>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "schema/events.h"

namespace baton {

namespace {

struct CancelOptions {
  std::string run;
  bool json = false;
};

int RunCancel(const CancelOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<RunRecord> run = (*store)->FindRun(o.run);
  if (!run.ok()) return ReportError(run.status());
  if (IsTerminal(run->status)) {
    if (o.json) {
      std::cout << nlohmann::json{{"run_id", run->id},
                                  {"status", RunStatusName(run->status)},
                                  {"changed", false}}
                       .dump()
                << "\n";
    } else {
      std::cout << "run " << run->id << " (" << run->name << ") is already "
                << RunStatusName(run->status) << "\n";
    }
    return 0;
  }
  if (!run->job_id.empty()) {
    RealSlurmClient slurm;
    if (Status st = slurm.Cancel(run->job_id); !st.ok()) return ReportError(st);
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
