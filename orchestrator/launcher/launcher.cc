#include "orchestrator/launcher/launcher.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "orchestrator/launcher/attempt_history.h"
#include "orchestrator/launcher/exit_policy.h"
#include "orchestrator/launcher/trainer_process.h"
#include "orchestrator/slurm/process_runner.h"
#include "schema/events.h"
#include "schema/exit_codes.h"
#include "schema/run_config.h"
#include "schema/run_folder.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace baton {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void LogSignal(int sig) {
  std::cerr << "baton launch: forwarded "
            << (sig == SIGUSR1   ? "SIGUSR1"
                : sig == SIGUSR2 ? "SIGUSR2"
                : sig == SIGTERM ? "SIGTERM"
                                 : "SIGINT")
            << " to the trainer\n";
}

// A run folder is a folder holding run.yaml (written by `baton submit`). Checked before anything
// is written, so a mistyped path creates nothing: not the folder, not events/ inside some
// other folder. A run.yaml that is there but broken is the config step's 78, not this.
Status CheckRunDir(const std::string& run_dir) {
  std::error_code ec;
  const fs::file_status dir = fs::status(run_dir, ec);
  if (dir.type() == fs::file_type::not_found) {
    return Status::NotFound("no run folder '" + run_dir + "' (nothing was created)");
  }
  if (ec) return Status::Io("cannot inspect the run folder " + run_dir + ": " + ec.message());
  if (!fs::is_directory(dir)) {
    return Status::NotFound("'" + run_dir + "' is not a run folder: not a directory");
  }
  const std::string config = RunFolder{run_dir}.RunYaml();
  const fs::file_status config_status = fs::status(config, ec);
  if (config_status.type() == fs::file_type::not_found) {
    return Status::NotFound("'" + run_dir + "' is not a run folder: " + config +
                            " does not exist (nothing was created)");
  }
  if (ec) return Status::Io("cannot inspect " + config + ": " + ec.message());
  return Status::Ok();
}

// `baton cancel` writes the mark before it runs scancel, so a launcher that got scancel's TERM
// always finds it: the TERM then ends the run for good instead of counting as a preemption.
bool CancelRequested(const std::string& run_dir) {
  std::error_code ec;
  return fs::exists(RunFolder{run_dir}.CancelMark(), ec);
}

bool OneOf(const std::string& s, std::initializer_list<const char*> xs) {
  for (const char* x : xs) {
    if (s == x) return true;
  }
  return false;
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
  if (!env.in_allocation) env.job_id = "local-" + std::to_string(std::time(nullptr));
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
  return env;
}

std::vector<std::string> TrainerCommand(const LaunchEnvironment& env, const std::string& run_dir,
                                        const ResumeDecision& d, const std::string& events_path) {
  std::vector<std::string> argv;
  if (env.use_srun) {
    // --kill-on-bad-exit: one rank dying takes the others down instead of leaving them hung
    // in a collective until the time limit.
    argv = {"srun", "--kill-on-bad-exit=1"};
  }
  const std::vector<std::string> train = {
      env.trainer_bin,   "train",
      "--config",        RunFolder{run_dir}.RunYaml(),
      "--run-dir",       run_dir,
      "--resume",        d.checkpoint.empty() ? "none" : d.checkpoint,
      "--expect-mode",   ResumeModeName(d.mode),
      "--expect-step0",  std::to_string(d.step0),
      "--resume-warmup", std::to_string(d.resume_warmup_steps),
      "--events",        events_path};
  argv.insert(argv.end(), train.begin(), train.end());
  return argv;
}

int Launch(const std::string& run_dir_in, const LaunchEnvironment& env, SlurmClient& slurm,
           std::ostream& log) {
  std::error_code ec;
  const std::string run_dir = fs::absolute(run_dir_in, ec).lexically_normal().string();
  const std::string events_path = RunFolder{run_dir}.EventsFile(env.job_id, env.restart_count);
  if (Status st = CheckRunDir(run_dir); !st.ok()) {
    log << "baton launch: " << st.ToString() << "\n";
    return st.exit_code();
  }
  log << "baton launch: run dir " << run_dir << ", job " << env.job_id << " restart "
      << env.restart_count << " on " << env.nodes << "\n";

  EventWriter events;
  if (Status st = events.Open(events_path, "launcher"); !st.ok()) {
    log << "baton launch: " << st.ToString() << "\n";
    return st.exit_code();
  }
  auto write_end = [&](int exit_code, ExitAction action, AttemptEndReason reason) {
    AttemptEndEvent e;
    e.job_id = env.job_id;
    e.restart_count = env.restart_count;
    e.exit_code = exit_code;
    e.action = ExitActionName(action);
    e.reason = AttemptEndReasonName(reason);
    if (Status st = events.Write(e, /*sync=*/true); !st.ok()) {
      log << "baton launch: " << st.ToString() << "\n";
    }
  };

  // 0. A cancelled run never trains again: a job that was requeued (by a preemption) before the
  // cancel reached it, and then started, ends here.
  if (CancelRequested(run_dir)) {
    log << "baton launch: the run was cancelled (" << RunFolder{run_dir}.CancelMark()
        << "); not training\n";
    write_end(kExitOk, ExitAction::kFail, AttemptEndReason::kCancelled);
    return kExitOk;
  }

  // 1. The frozen config. A broken one is never requeued. model.init_from is not looked at: a
  // requeued run resumes from its own checkpoint, and the trainer checks the upstream folder
  // itself on a fresh start (an upstream folder purged since submit must not fail a requeue).
  RunConfigOptions config_options;
  config_options.check_init_from = false;
  Result<RunConfig> config = LoadRunConfig(RunFolder{run_dir}.RunYaml(), config_options);
  if (!config.ok()) {
    log << "baton launch: " << config.status().ToString() << "\n";
    write_end(config.status().exit_code(), ExitAction::kFail,
              config.status().code() == Code::kConfig ? AttemptEndReason::kConfigError
                                                      : AttemptEndReason::kDataError);
    return config.status().exit_code();
  }

  // 2. Resume decision.
  ResumeRequest request;
  request.resume_warmup_steps = config->optim.resume_warmup_steps;
  Result<ResumeDecision> decision = DecideResume(RunFolder{run_dir}.CheckpointsDir(), request);
  if (!decision.ok()) {
    log << "baton launch: " << decision.status().ToString() << "\n";
    write_end(decision.status().exit_code(), ExitAction::kFail, AttemptEndReason::kDataError);
    return decision.status().exit_code();
  }
  for (const std::string& s : decision->skipped) {
    log << "baton launch: skipping invalid checkpoint " << s << "\n";
  }
  log << "baton launch: mode " << ResumeModeName(decision->mode) << ", step0 " << decision->step0
      << ", resume warmup " << decision->resume_warmup_steps
      << (decision->checkpoint.empty() ? "" : ", from " + decision->checkpoint) << "\n";
  AttemptStartEvent start;
  start.job_id = env.job_id;
  start.restart_count = env.restart_count;
  start.nodes = env.nodes;
  if (!decision->checkpoint.empty()) start.checkpoint = decision->checkpoint;
  start.mode = ResumeModeName(decision->mode);
  start.step0 = decision->step0;
  start.resume_warmup_steps = decision->resume_warmup_steps;
  start.skipped_checkpoints = decision->skipped;
  if (Status st = events.Write(start, /*sync=*/true); !st.ok()) {
    log << "baton launch: " << st.ToString() << "\n";
    return st.exit_code();
  }

  // 3. The trainer.
  if (env.trainer_bin.empty()) {
    log << "baton launch: no trainer binary (set BATON_TRAIN_BIN or install baton-train next to "
           "baton)\n";
    write_end(kExitUnavailable, ExitAction::kFail, AttemptEndReason::kLaunchError);
    return kExitUnavailable;
  }
  const std::vector<std::string> argv = TrainerCommand(env, run_dir, *decision, events_path);
  log << "baton launch: " << CommandLine(argv) << "\n" << std::flush;
  Result<TrainerExit> exit = RunTrainerProcess(argv, LogSignal);
  if (!exit.ok()) {
    log << "baton launch: " << exit.status().ToString() << "\n";
    write_end(exit.status().exit_code(), ExitAction::kFail, AttemptEndReason::kLaunchError);
    return exit.status().exit_code();
  }
  log << "baton launch: trainer exited with code " << exit->exit_code << "\n";

  // 4. What next.
  ExitContext ctx;
  ctx.exit_code = exit->exit_code;
  ctx.stop_signalled = !exit->forwarded.empty();
  ctx.history = ReadAttemptHistory(run_dir);
  if (ctx.history.empty() || ctx.history.back().events_path != events_path) {
    PastAttempt self;  // should not happen: our own file is there
    self.events_path = events_path;
    self.step0 = decision->step0;
    ctx.history.push_back(self);
  }
  ctx.max_restarts = config->slurm.max_restarts;
  ctx.max_failures = config->slurm.max_failures;
  if (ctx.stop_signalled && env.in_allocation) {
    // The same warning signal announces a preemption and the time limit; the limit tells them
    // apart.
    Result<std::optional<JobInfo>> job = slurm.GetJob(env.job_id);
    if (job.ok() && job->has_value() && (*job)->fields.count("StartTime") &&
        (*job)->fields.count("TimeLimit")) {
      ctx.near_time_limit =
          NearTimeLimit((*job)->fields.at("StartTime"), (*job)->fields.at("TimeLimit"),
                        double(std::time(nullptr)), config->slurm.signal_lead_s);
    }
  }
  ExitDecision next = DecideAfterExit(ctx);

  // scancel's TERM looks like a preemption to the trainer (it checkpoints and exits 75); the
  // mark tells them apart.
  if (next.action == ExitAction::kRequeue && CancelRequested(run_dir)) {
    next = {ExitAction::kFail, AttemptEndReason::kCancelled,
            "cancelled by `baton cancel` (" + RunFolder{run_dir}.CancelMark() + "); not requeued"};
  }
  if (next.action == ExitAction::kRequeue && env.in_allocation) {
    Result<std::optional<JobInfo>> job = slurm.GetJob(env.job_id);
    const std::string state = job.ok() && job->has_value() ? (*job)->state : "";
    if (state == "CANCELLED") {
      next = {ExitAction::kFail, AttemptEndReason::kCancelled,
              "the job was cancelled; not requeued"};
    } else if (OneOf(state, {"PENDING", "REQUEUED", "REQUEUE_HOLD", "PREEMPTED"})) {
      // SLURM requeued the job itself (PreemptMode=REQUEUE); a second requeue would fail or,
      // worse, count twice.
      log << "baton launch: " << next.detail << "; SLURM already requeued job " << env.job_id
          << " (" << state << ")\n";
      write_end(exit->exit_code, next.action, next.reason);
      return kExitRequeue;
    }
  }
  log << "baton launch: " << ExitActionName(next.action) << " ("
      << AttemptEndReasonName(next.reason) << "): " << next.detail << "\n";
  // attempt_end goes first: `scontrol requeue` may kill this script before it returns.
  write_end(exit->exit_code, next.action, next.reason);
  if (next.action == ExitAction::kDone) return kExitOk;
  if (next.action == ExitAction::kFail)
    return exit->exit_code != 0 ? exit->exit_code : kExitFailure;

  if (!env.in_allocation) {
    log << "baton launch: not inside a SLURM job; nothing to requeue\n";
    return kExitRequeue;
  }
  Status st = slurm.Requeue(env.job_id);
  if (!st.ok()) {
    log << "baton launch: requeue failed: " << st.ToString() << "\n";
    write_end(exit->exit_code, ExitAction::kFail, AttemptEndReason::kRequeueFailed);
    return st.exit_code();
  }
  log << "baton launch: requeued job " << env.job_id << "\n";
  return kExitRequeue;
}

}  // namespace baton
