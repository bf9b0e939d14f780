// baton-train: the embedded trainer's command line. Subcommands live in trainer/tools/.
//
// This is the process boundary of the trainer's fail-fast error style: a FatalError becomes its
// exit code (65 data, 78 config, ...), a c10::Error or any other exception an internal error (70),
// and bad usage 64. The launcher decides whether to requeue from these codes.
#include <c10/util/Exception.h>

#include <iostream>

#include "schema/exit_codes.h"
#include "trainer/fail.h"
#include "trainer/tools/commands.h"
#include "trainer/tools/version_text.h"
#include "trainer/train/stop_signal.h"

namespace {
// Runs before any shared library's initialiser (libtorch's take most of the start-up time), so a
// stop signal that arrives while the process is still loading waits instead of killing it.
void BlockStopSignalsEarly(int, char**, char**) { baton::BlockStopSignals(); }
__attribute__((section(".preinit_array"),
               used)) void (*const kBlockStopSignals)(int, char**, char**) = &BlockStopSignalsEarly;
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"baton-train: the packed video-action trainer of baton"};
  // Version, source revision, libtorch and CUDA: computed only when asked (CUDA is probed).
  app.set_version_flag("--version", std::function<std::string()>(baton::TrainerVersionText));
  app.require_subcommand(1);
  baton::CommandFn run;
  baton::RegisterSynthData(app, &run);
  baton::RegisterSamplerStats(app, &run);
  baton::RegisterDataCheck(app, &run);
  baton::RegisterTrain(app, &run);
  baton::RegisterLrSchedule(app, &run);
  baton::RegisterVerifyPacking(app, &run);
  baton::RegisterOneStep(app, &run);
  baton::RegisterTensorDiff(app, &run);
  baton::RegisterCkpt(app, &run);
  baton::RegisterLeRobotStats(app, &run);
  baton::RegisterImportLeRobot(app, &run);
  baton::RegisterForward(app, &run);
  baton::RegisterPlanMemory(app, &run);
  baton::RegisterEval(app, &run);
  baton::RegisterExport(app, &run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    baton::UnblockStopSignals();
    const int rc = app.exit(e);
    return rc == 0 ? baton::kExitOk : baton::kExitUsage;
  }
  // Only `train` checkpoints on a stop signal; every other command keeps the default action.
  if (!app.got_subcommand("train")) baton::UnblockStopSignals();
  try {
    return run();
  } catch (const baton::FatalError& e) {
    std::cerr << "baton-train: " << e.what() << "\n";
    return e.exit_code();
  } catch (const c10::Error& e) {
    std::cerr << "baton-train: internal error in libtorch: " << e.what_without_backtrace() << "\n";
    return baton::kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << "baton-train: internal error: " << e.what() << "\n";
    return baton::kExitInternal;
  }
}
