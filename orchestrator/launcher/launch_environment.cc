// The launcher's environment and the trainer command it runs (launcher.h): what SLURM and
// BATON_* variables say about this job start, where baton-train is, and its exact argv.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "orchestrator/launcher/launcher.h"
#include "orchestrator/slurm/process_runner.h"
#include "orchestrator/slurm/srun_command.h"
#include "schema/clock.h"
#include "schema/run_folder.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string FindTrainerBinary() {
  const std::string explicit_bin = Env("BATON_TRAIN_BIN");
  if (!explicit_bin.empty()) return FindExecutable(explicit_bin);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const fs::path& p : {self.parent_path() / "baton-train",
                            self.parent_path().parent_path() / "trainer" / "baton-train"}) {
    const std::string found = FindExecutable(p.string());
    if (!found.empty()) return found;
  }
  return "";
}

LaunchEnvironment LaunchEnvironmentFromProcess() {
  LaunchEnvironment env;
  env.job_id = Env("SLURM_JOB_ID");
  env.in_allocation = !env.job_id.empty();
  // A sweep member is an array task: "<array>_<task>" is the id baton stored for it, the one
  // scontrol requeue and the hold release take, and it stays the same across requeues.
  const std::string array = Env("SLURM_ARRAY_JOB_ID");
  const std::string task = Env("SLURM_ARRAY_TASK_ID");
  if (env.in_allocation && !array.empty() && !task.empty()) env.job_id = array + "_" + task;
  if (!env.in_allocation) env.job_id = "local-" + std::to_string(int64_t(UnixTimeNow()));
  const std::string restart = Env("SLURM_RESTART_COUNT");
  env.restart_count = restart.empty() ? 0 : std::atoll(restart.c_str());
  env.nodes = Env("SLURM_JOB_NODELIST");
  if (env.nodes.empty()) {
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    env.nodes = host;
  }
  env.use_srun = env.in_allocation && Env("BATON_NO_SRUN") != "1";
  env.trainer_bin = FindTrainerBinary();
  if (env.in_allocation && Env("BATON_NO_PREFLIGHT") != "1") {
    std::error_code ec;
    env.preflight_bin = fs::read_symlink("/proc/self/exe", ec).string();
  }
  return env;
}

std::vector<std::string> TrainerCommand(const LaunchEnvironment& env, const std::string& run_dir,
                                        const ResumeDecision& d, const std::string& events_path) {
  const std::vector<std::string> train = {
      env.trainer_bin,   "train",
      "--config",        RunFolder{run_dir}.RunYaml(),
      "--run-dir",       run_dir,
      "--resume",        d.checkpoint.empty() ? "none" : d.checkpoint,
      "--expect-mode",   Name(d.mode),
      "--expect-step0",  std::to_string(d.step0),
      "--resume-warmup", std::to_string(d.resume_warmup_steps),
      "--events",        events_path};
  return env.use_srun ? SrunTrainingStep(train) : train;
}

}  // namespace baton
