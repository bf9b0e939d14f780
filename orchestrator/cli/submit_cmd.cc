// `baton submit CFG [--name N] [--dry-run] [--json] [--strict]` (submitter.h does the work).
#include <iostream>
#include <memory>

#include "orchestrator/alerts/alert_pass.h"
#include "orchestrator/alerts/node_refusal_alert.h"
#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "orchestrator/submit/submitter.h"
#include "schema/clock.h"
#include "schema/events.h"
#include "schema/run_config.h"

namespace baton {

namespace {

// What the exclusion cap kept in the new job's node list: a `refuse` action on the node and a
// `cannot_exclude` incident for the sinks. The job is submitted already; a problem is a warning.
void RecordRefusals(Store& store, const SubmitResult& r) {
  const Status st =
      RecordNewJobRefusals(store, r.run_id, r.job_id, r.exclusion_refused, UnixTimeNow());
  if (!st.ok())
    std::cerr << "baton: warning: exclusion refusal not recorded: " << st.ToString() << "\n";
}

struct SubmitOptions {
  std::string config;
  std::string name;
  bool dry_run = false;
  bool json = false;
  bool strict = false;
};

int RunSubmit(const SubmitOptions& o) {
  SubmitRequest req;
  req.config_path = o.config;
  req.name = o.name;
  req.dry_run = o.dry_run;
  req.baton_bin = SelfPath();
  req.baton_home = BatonHome();
  req.trainer_bin = FindTrainerBinary();
  req.strict = o.strict;
  RealSlurmClient slurm;
  std::unique_ptr<Store> store;
  if (!o.dry_run) {
    // Validate before touching $BATON_HOME: a bad config must not even create the database.
    Result<RunConfig> config = LoadRunConfig(o.config);
    if (!config.ok()) return ReportError(config.status());
    for (const std::string& w : config->warnings) std::cerr << "baton: warning: " << w << "\n";
    // A sink whose URL will not resolve is refused now, not found out at the first incident.
    if (Status st = CheckAlertsAtSubmit(o.config); !st.ok()) return ReportError(st);
    Result<std::unique_ptr<Store>> opened = OpenDefaultStore();
    if (!opened.ok()) return ReportError(opened.status());
    store = std::move(opened).value();
  }
  Result<SubmitResult> r = SubmitRun(store.get(), slurm, req, UnixTimeNow());
  if (!r.ok()) return ReportError(r.status());
  for (const std::string& w : r->warnings) std::cerr << "baton: warning: " << w << "\n";
  const nlohmann::ordered_json storage =
      r->storage ? r->storage->ToJson() : nlohmann::ordered_json(nullptr);
  if (!o.dry_run) RecordRefusals(*store, *r);
  if (o.dry_run) {
    if (o.json) {
      std::cout << nlohmann::ordered_json{{"run_id", nullptr},   {"job_id", nullptr},
                                          {"name", r->name},     {"run_dir", r->run_dir},
                                          {"script", r->script}, {"storage", storage}}
                       .dump(2)
                << "\n";
    } else {
      // stdout is the script itself: the forecast goes beside the warnings.
      if (r->storage) std::cerr << "baton: " << r->storage->Line() << "\n";
      std::cout << r->script;
    }
    return 0;
  }
  if (o.json) {
    std::cout << nlohmann::ordered_json{{"run_id", r->run_id},
                                        {"job_id", r->job_id},
                                        {"name", r->name},
                                        {"run_dir", r->run_dir},
                                        {"storage", storage}}
                     .dump()
              << "\n";
  } else {
    std::cout << "run " << r->run_id << " (" << r->name << ") submitted as SLURM job " << r->job_id
              << "\n  run dir: " << r->run_dir << "\n";
    if (r->storage) std::cout << "  " << r->storage->Line() << "\n";
  }
  return 0;
}

}  // namespace

void AddSubmitCommand(CLI::App& app, int* rc) {
  auto o = std::make_shared<SubmitOptions>();
  CLI::App* cmd = app.add_subcommand("submit", "Validate a run config and submit it with sbatch");
  cmd->add_option("config", o->config, "Run config (YAML)")->required();
  cmd->add_option("--name", o->name, "Run name (default: run.name)");
  cmd->add_flag("--dry-run", o->dry_run, "Print the batch script; submit nothing");
  cmd->add_flag("--json", o->json, "Print {\"run_id\": .., \"job_id\": ..}");
  cmd->add_flag("--strict", o->strict,
                "Refuse a run whose stop save does not fit the preemption grace (exit 78) or "
                "whose storage forecast does not fit the run folder's free space or quota (74)");
  cmd->callback([o, rc] { *rc = RunSubmit(*o); });
}

}  // namespace baton
