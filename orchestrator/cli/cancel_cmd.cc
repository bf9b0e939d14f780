// `baton cancel RUN [--json]`: cancel a run and its job (canceller.h does the work: the folder's
// cancel mark, scancel, then the store; a failed cancel changes nothing). Exit 74 when the mark
// cannot be written, 69 when SLURM cannot be reached. Each cancel is audited (run_actions) under
// the Unix user who asked.
#include <iostream>
#include <memory>

#include "orchestrator/cli/cli_audit.h"
#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "orchestrator/submit/canceller.h"
#include "schema/clock.h"
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
  RealSlurmClient slurm;
  const double now = UnixTimeNow();
  Result<CancelRunResult> r = CancelRun(**store, slurm, o.run, "`baton cancel`", now);
  AuditCliAction(**store, o.run, "cancel", r.status(), now);
  if (!r.ok()) return ReportError(r.status());
  if (o.json) {
    nlohmann::json j{{"run_id", r->run_id}, {"status", r->status}, {"changed", r->changed}};
    if (r->changed) j["job_id"] = r->job_id;
    std::cout << j.dump() << "\n";
  } else if (r->changed) {
    std::cout << "run " << r->run_id << " (" << r->name << ") cancelled"
              << (r->job_id.empty() ? "" : " (scancel " + r->job_id + ")") << "\n";
  } else {
    std::cout << "run " << r->run_id << " (" << r->name << ") is already " << r->status
              << (r->repeated ? " (scancel " + r->job_id + " repeated)" : "") << "\n";
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
