// `baton resume RUN [--config CFG] [--json]`: continue a stopped or waiting run as a new SLURM
// job in the same folder, optionally with other slurm: settings (resumer.h does the work).
#include <iostream>
#include <memory>

#include "orchestrator/alerts/node_refusal_alert.h"
#include "orchestrator/cli/cli_audit.h"
#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "orchestrator/submit/resumer.h"
#include "schema/clock.h"
#include "schema/events.h"

namespace baton {

namespace {

struct ResumeOptions {
  std::string run;
  std::string config;
  bool json = false;
  bool strict = false;
};

int RunResume(const ResumeOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  RealSlurmClient slurm;
  ResumeRunRequest req{o.run, o.config, SelfPath(), FindTrainerBinary(), o.strict};
  const double now = UnixTimeNow();
  Result<ResumeRunResult> r = ResumeRun(**store, slurm, req, now);
  AuditCliAction(**store, o.run, "resume", r.status(), now);
  if (!r.ok()) return ReportError(r.status());
  for (const std::string& w : r->warnings) std::cerr << "baton: warning: " << w << "\n";
  // As submit does: what the exclusion cap kept in the new job's list reaches the sinks.
  if (Status st = RecordNewJobRefusals(**store, r->run_id, r->job_id, r->exclusion_refused, now);
      !st.ok()) {
    std::cerr << "baton: warning: exclusion refusal not recorded: " << st.ToString() << "\n";
  }
  if (o.json) {
    std::cout << nlohmann::json{{"run_id", r->run_id},
                                {"name", r->name},
                                {"run_dir", r->run_dir},
                                {"previous_status", r->previous_status},
                                {"cancelled_job", r->cancelled_job},
                                {"job_id", r->job_id},
                                {"changed", r->changed}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << "run " << r->run_id << " (" << r->name << ") was " << r->previous_status
            << "; resumed as job " << r->job_id;
  if (!r->cancelled_job.empty()) std::cout << " (took back waiting job " << r->cancelled_job << ")";
  std::cout << "\n";
  for (const std::string& c : r->changed) std::cout << "  " << c << "\n";
  return 0;
}

}  // namespace

void AddResumeCommand(CLI::App& app, int* rc) {
  auto o = std::make_shared<ResumeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "resume", "Continue a stopped or waiting run as a new job (only slurm: keys may change)");
  cmd->add_option("run", o->run, "Run id or name")->required();
  cmd->add_option("--config", o->config,
                  "The run's config with edited slurm: keys (default: the frozen run.yaml)");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_flag("--strict", o->strict,
                "Refuse the resume when the stop save may not fit the preemption grace, as "
                "submit --strict does");
  cmd->callback([o, rc] { *rc = RunResume(*o); });
}

}  // namespace baton
