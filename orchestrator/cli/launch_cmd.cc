// `baton launch RUN_DIR`: the in-job entry point (launcher.h). Runs inside the allocation,
// where sbatch.sh execs it.
#include <iostream>
#include <memory>

#include "orchestrator/cli/commands.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/slurm/real_slurm_client.h"

namespace baton {

void AddLaunchCommand(CLI::App& app, int* rc) {
  auto run_dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "launch", "Run one attempt of a run inside its SLURM job (used by sbatch.sh)");
  cmd->add_option("run_dir", *run_dir, "The run's folder")->required();
  cmd->callback([run_dir, rc] {
    RealSlurmClient slurm;
    *rc = Launch(*run_dir, LaunchEnvironmentFromProcess(), slurm, std::cerr);
  });
}

}  // namespace baton
