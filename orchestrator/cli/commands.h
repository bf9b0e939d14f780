// The subcommands of `baton`. Each Add*Command registers one or more CLI11 subcommands whose
// callback stores the command's process exit code in *rc (schema/exit_codes.h). main.cc only
// wires them up. Single-threaded.
#pragma once

#include <CLI/CLI.hpp>

namespace baton {

void AddSubmitCommand(CLI::App& app, int* rc);    // submit_cmd.cc
void AddLaunchCommand(CLI::App& app, int* rc);    // launch_cmd.cc
void AddQueryCommands(CLI::App& app, int* rc);    // query_cmds.cc: ls, show, attempts, checkpoints
void AddCancelCommand(CLI::App& app, int* rc);    // cancel_cmd.cc
void AddResumeCommand(CLI::App& app, int* rc);    // resume_cmd.cc
void AddWatchCommand(CLI::App& app, int* rc);     // watch_cmd.cc
void AddManifestCommand(CLI::App& app, int* rc);  // manifest_cmd.cc (hidden; test helper)
void AddServeCommand(CLI::App& app, int* rc);     // serve_cmd.cc: web UI + background sync
void AddTokenCommands(CLI::App& app, int* rc);    // token_cmd.cc: token add, list, revoke
void AddStoreCommand(CLI::App& app, int* rc);     // store_check_cmd.cc: store check [--repair]
void AddAlertsCommands(CLI::App& app, int* rc);   // alerts_cmd.cc: alerts test, incidents
void AddSweepCommands(CLI::App& app,
                      int* rc);  // sweep_cmd.cc: sweep, sweeps, sweep show/cancel/resume
void AddNodesCommands(CLI::App& app, int* rc);  // nodes_cmd.cc: nodes [exclude|readmit], preflight
void AddExportCommand(CLI::App& app, int* rc);  // export_cmd.cc: export RUN DIR
// store_copy_cmd.cc: `store copy`, added to the `store` command AddStoreCommand makes.
void AddStoreCopyCommand(CLI::App& store, int* rc);

}  // namespace baton
