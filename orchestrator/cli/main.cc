// baton: the orchestrator's command line (never links libtorch).
//
// Each subcommand returns an exit code from a Status: 0 ok, 64 usage, 78 config, 66 unknown run,
// 69 SLURM unavailable, ... (schema/exit_codes.h). Commands live in one file each (commands.h).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "orchestrator/cli/commands.h"
#include "schema/build_info.h"
#include "schema/exit_codes.h"
#include "schema/run_config.h"

namespace {

int Validate(const std::string& path, bool print) {
  baton::Result<baton::RunConfig> config = baton::LoadRunConfig(path);
  if (!config.ok()) {
    std::cerr << "baton: " << config.status().ToString() << "\n";
    return config.status().exit_code();
  }
  for (const std::string& w : config->warnings) std::cerr << "baton: warning: " << w << "\n";
  if (print) {
    std::cout << baton::ToYaml(config.value());
  } else {
    std::cout << path << ": ok (run '" << config->run.name << "', " << config->run.steps
              << " steps)\n";
  }
  return baton::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"baton: SLURM-native orchestrator for preemptible training runs"};
  // Version and source revision, what a bug report needs (schema/build_info.h).
  app.set_version_flag("--version", baton::VersionText("baton"));
  app.require_subcommand(1);
  // --store names the database for every command (as BATON_STORE does); options given after a
  // subcommand fall through to here, so `baton ls --store X` works too. It goes into the
  // environment at once, before any command opens the store, and on to the processes baton
  // starts (watch, serve's writers).
  app.fallthrough();
  app.add_option_function<std::string>(
         "--store", [](const std::string& spec) { ::setenv("BATON_STORE", spec.c_str(), 1); },
         "The store: sqlite:PATH, postgresql://... or postgres://... (default: BATON_STORE, "
         "else SQLite at $BATON_HOME/baton.db)")
      ->trigger_on_parse();

  int rc = baton::kExitUsage;
  std::string config_path;
  bool print = false;
  CLI::App* validate = app.add_subcommand("validate", "Check a run config and print problems");
  validate->add_option("config", config_path, "Run config (YAML)")->required();
  validate->add_flag("--print", print, "Print the resolved config (every key, absolute paths)");
  validate->callback([&] { rc = Validate(config_path, print); });

  baton::AddSubmitCommand(app, &rc);
  baton::AddLaunchCommand(app, &rc);
  baton::AddQueryCommands(app, &rc);
  baton::AddCancelCommand(app, &rc);
  baton::AddResumeCommand(app, &rc);
  baton::AddWatchCommand(app, &rc);
  baton::AddManifestCommand(app, &rc);
  baton::AddServeCommand(app, &rc);
  baton::AddTokenCommands(app, &rc);
  baton::AddStoreCommand(app, &rc);
  baton::AddAlertsCommands(app, &rc);
  baton::AddSweepCommands(app, &rc);
  baton::AddNodesCommands(app, &rc);
  baton::AddExportCommand(app, &rc);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? baton::kExitOk : baton::kExitUsage;
  }
  return rc;
}
