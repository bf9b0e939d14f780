// The subcommands of baton-train. Each Register* adds one CLI11 subcommand whose callback stores
// the function main() runs after parsing; that function returns the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace baton {

using CommandFn = std::function<int()>;

void RegisterSynthData(CLI::App& app, CommandFn* selected);
void RegisterSamplerStats(CLI::App& app, CommandFn* selected);
void RegisterDataCheck(CLI::App& app, CommandFn* selected);
void RegisterTrain(CLI::App& app, CommandFn* selected);
void RegisterLrSchedule(CLI::App& app, CommandFn* selected);
void RegisterVerifyPacking(CLI::App& app, CommandFn* selected);
void RegisterOneStep(CLI::App& app, CommandFn* selected);
void RegisterTensorDiff(CLI::App& app, CommandFn* selected);
void RegisterCkpt(CLI::App& app, CommandFn* selected);
void RegisterLeRobotStats(CLI::App& app, CommandFn* selected);
void RegisterImportLeRobot(CLI::App& app, CommandFn* selected);
void RegisterForward(CLI::App& app, CommandFn* selected);
void RegisterPlanMemory(CLI::App& app, CommandFn* selected);
void RegisterEval(CLI::App& app, CommandFn* selected);
void RegisterExport(CLI::App& app, CommandFn* selected);
// `ckpt upgrade`, added to the `ckpt` subcommand (it needs libtorch; ckpt's others do not).
void AddCkptUpgrade(CLI::App* ckpt, CommandFn* selected);

}  // namespace baton
