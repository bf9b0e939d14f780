#include "orchestrator/launcher/launcher.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "orchestrator/launcher/attempt_history.h"
#include "orchestrator/launcher/exit_policy.h"
#include "orchestrator/launcher/hang_response.h"
#include "orchestrator/launcher/hang_watch.h"
#include "orchestrator/launcher/node_checks.h"
#include "orchestrator/launcher/trainer_process.h"
#include "orchestrator/slurm/job_state.h"
#include "orchestrator/slurm/process_runner.h"
#include "schema/clock.h"
#include "schema/events.h"
#include "schema/exit_codes.h"
#include "schema/run_config.h"
#include "schema/run_folder.h"
#include "schema/stop_signals.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace baton {

namespace {

void LogSignal(int sig) {
  const StopSignalEntry* e = FindStopSignal(sig);
  std::cerr << "baton launch: forwarded " << (e ? e->posix_name : "SIGINT") << " to the trainer\n";
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

}  // namespace

namespace {

// Every rank's heartbeat file of an earlier trainer goes before a new one starts, so a stale
// record is never judged (HangWatch also ignores the records it finds at its start).
void ClearHeartbeats(const std::string& run_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(RunFolder{run_dir}.HeartbeatDir(), ec)) {
    std::error_code e2;
    if (e.path().filename().string().rfind("rank-", 0) == 0) fs::remove(e.path(), e2);
  }
}

}  // namespace

int Launch(const std::string& run_dir_in, const LaunchEnvironment& env, SlurmClient& slurm,
           std::ostream& log) {
  std::error_code ec;
  const std::string run_dir = fs::absolute(run_dir_in, ec).lexically_normal().string();
  if (Status st = CheckRunDir(run_dir); !st.ok()) {
    log << "baton launch: " << st.ToString() << "\n";
    return st.exit_code();
  }
  log << "baton launch: run dir " << run_dir << ", job " << env.job_id << " restart "
      << env.restart_count << " on " << env.nodes << "\n";

  int64_t seq = 0;  // restarts of the trainer inside this job start
  RestartCause cause = RestartCause::kNone;
  int64_t stalled_restarts = 0;
  std::optional<Result<ResumeDecision>> next_decision;
  while (true) {
    const std::string events_path =
        RunFolder{run_dir}.EventsFile(env.job_id, env.restart_count, seq);
    EventWriter events;
    if (Status st = events.Open(events_path, "launcher"); !st.ok()) {
      log << "baton launch: " << st.ToString() << "\n";
      return st.exit_code();
    }
    auto write_end = [&](int exit_code, ExitAction action, AttemptEndReason reason,
                         const HangResponse* hang = nullptr) {
      AttemptEndEvent e;
      e.job_id = env.job_id;
      e.restart_count = env.restart_count;
      e.exit_code = exit_code;
      e.action = Name(action);
      e.reason = Name(reason);
      e.in_job_seq = seq;
      if (hang != nullptr && hang->report) {
        e.hang_detected_at = hang->report->detected_at;
        e.hang_last_heartbeat_at = hang->report->last_heartbeat_at;
        e.hang_stale_ranks = hang->report->StaleRanksText();
        e.hang_stack = hang->stacks;
      }
      if (Status st = events.Write(e, /*sync=*/true); !st.ok()) {
        log << "baton launch: " << st.ToString() << "\n";
      }
    };

    // 0. A cancelled run never trains again: a job that was requeued (by a preemption) before
    // the cancel reached it, and then started, ends here.
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

    // 2. Resume decision (after a restart in the job: the one made when the last trainer ended).
    ResumeRequest request;
    request.resume_warmup_steps = config->optim.resume_warmup_steps;
    Result<ResumeDecision> decision =
        next_decision ? std::move(*next_decision)
                      : DecideResume(RunFolder{run_dir}.CheckpointsDir(), request);
    next_decision.reset();
    if (!decision.ok()) {
      log << "baton launch: " << decision.status().ToString() << "\n";
      write_end(decision.status().exit_code(), ExitAction::kFail, AttemptEndReason::kDataError);
      return decision.status().exit_code();
    }
    for (const std::string& s : decision->skipped) {
      log << "baton launch: skipping invalid checkpoint " << s << "\n";
    }
    log << "baton launch: "
        << (seq > 0 ? "in-job restart " + std::to_string(seq) + " (" + Name(cause) + "): " : "")
        << "mode " << Name(decision->mode) << ", step0 " << decision->step0 << ", resume warmup "
        << decision->resume_warmup_steps
        << (decision->checkpoint.empty() ? "" : ", from " + decision->checkpoint) << "\n";
    AttemptStartEvent start;
    start.job_id = env.job_id;
    start.restart_count = env.restart_count;
    start.nodes = env.nodes;
    if (!decision->checkpoint.empty()) start.checkpoint = decision->checkpoint;
    start.mode = Name(decision->mode);
    start.step0 = decision->step0;
    start.resume_warmup_steps = decision->resume_warmup_steps;
    start.skipped_checkpoints = decision->skipped;
    start.in_job_seq = seq;
    start.restart_cause = Name(cause);
    if (Status st = events.Write(start, /*sync=*/true); !st.ok()) {
      log << "baton launch: " << st.ToString() << "\n";
      return st.exit_code();
    }

    // 3. The trainer, watched through its ranks' heartbeats.
    if (env.trainer_bin.empty()) {
      log << "baton launch: no trainer binary (set BATON_TRAIN_BIN or install baton-train next "
             "to baton)\n";
      write_end(kExitUnavailable, ExitAction::kFail, AttemptEndReason::kLaunchError);
      return kExitUnavailable;
    }
    const std::vector<std::string> argv = TrainerCommand(env, run_dir, *decision, events_path);
    log << "baton launch: " << CommandLine(argv) << "\n" << std::flush;
    ClearHeartbeats(run_dir);
    HangLimits limits;
    limits.min_s = config->train.hang_min_s;
    limits.factor = config->train.hang_factor;
    limits.first_step_s = config->train.first_step_timeout_s;
    const int64_t ranks = env.use_srun ? config->slurm.nodes * config->slurm.ntasks_per_node : 1;
    HangWatch watch(run_dir, ranks, decision->step0, MonotonicNow(), limits);
    HangResponse hang(watch, {env.job_id, env.use_srun, 0, ThisHost()}, log);
    StragglerWatch stragglers;
    // Every node checks itself first (node_checks.h); a failed one ends the attempt unhealthy.
    const bool healthy = PreflightPasses(env, run_dir, config->slurm.nodes, seq, log);
    Result<TrainerExit> exit =
        healthy ? RunTrainerProcess(argv, LogSignal,
                                    [&](int pid) {
                                      ObserveStragglers(watch, ranks, &stragglers);
                                      return hang(pid);
                                    })
                : Result<TrainerExit>(TrainerExit{kExitNodeUnhealthy, 0, {}, false});
    if (!exit.ok()) {
      log << "baton launch: " << exit.status().ToString() << "\n";
      write_end(exit.status().exit_code(), ExitAction::kFail, AttemptEndReason::kLaunchError);
      return exit.status().exit_code();
    }
    log << "baton launch: trainer exited with code " << exit->exit_code
        << (hang.report ? " (ended on a hang)" : "") << "\n";
    RecordLauncherIncidents(env, run_dir, seq, hang.report ? &*hang.report : nullptr,
                            exit->exit_code, log);
    RecordStragglers(env, run_dir, seq, stragglers.found(), log);

    // 4. What next: a restart inside the allocation, else the exit policy.
    const bool stop_signalled = !exit->forwarded.empty();
    cause = RestartCauseOf(exit->exit_code, stop_signalled, hang.report.has_value());
    if (cause != RestartCause::kNone && !CancelRequested(run_dir)) {
      next_decision = DecideResume(RunFolder{run_dir}.CheckpointsDir(), request);
      const bool advanced = next_decision->ok() && (*next_decision)->step0 > decision->step0;
      if (seq > 0) stalled_restarts = advanced ? 0 : stalled_restarts + 1;
      InJobContext in_job;
      in_job.cause = cause;
      in_job.in_job_seq = seq;
      in_job.in_job_restarts = config->slurm.in_job_restarts;
      in_job.stalled_restarts = stalled_restarts;
      if (std::optional<ExitDecision> d = DecideInJobRestart(in_job)) {
        log << "baton launch: " << Name(d->action) << " (" << Name(d->reason) << "): " << d->detail
            << "\n"
            << std::flush;
        write_end(exit->exit_code, d->action, d->reason, &hang);
        if (d->action == ExitAction::kFail)
          return exit->exit_code != 0 ? exit->exit_code : kExitFailure;
        ++seq;
        continue;
      }
      next_decision.reset();
    }

    ExitContext ctx;
    ctx.exit_code = exit->exit_code;
    ctx.hang = hang.report.has_value();
    ctx.stop_signalled = stop_signalled;
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
                          UnixTimeNow(), config->slurm.signal_lead_s);
      }
    }
    ExitDecision next = DecideAfterExit(ctx);

    // scancel's TERM looks like a preemption to the trainer (it checkpoints and exits 75); the
    // mark tells them apart.
    if (next.action == ExitAction::kRequeue && CancelRequested(run_dir)) {
      next = {
          ExitAction::kFail, AttemptEndReason::kCancelled,
          "cancelled by `baton cancel` (" + RunFolder{run_dir}.CancelMark() + "); not requeued"};
    }
    if (next.action == ExitAction::kRequeue && env.in_allocation) {
      Result<std::optional<JobInfo>> job = slurm.GetJob(env.job_id);
      const std::string state = job.ok() && job->has_value() ? (*job)->state : "";
      const JobState s = ParseJobState(state);
      if (s == JobState::kCancelled) {
        next = {ExitAction::kFail, AttemptEndReason::kCancelled,
                "the job was cancelled; not requeued"};
      } else if (IsAnyOf(s, {JobState::kPending, JobState::kRequeued, JobState::kRequeueHold,
                             JobState::kPreempted})) {
        // SLURM requeued the job itself (PreemptMode=REQUEUE); a second requeue would fail or,
        // worse, count twice.
        log << "baton launch: " << next.detail << "; SLURM already requeued job " << env.job_id
            << " (" << state << ")\n";
        write_end(exit->exit_code, next.action, next.reason, &hang);
        return kExitRequeue;
      }
    }
    log << "baton launch: " << Name(next.action) << " (" << Name(next.reason)
        << "): " << next.detail << "\n";
    // attempt_end goes first: `scontrol requeue` may kill this script before it returns.
    write_end(exit->exit_code, next.action, next.reason, &hang);
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
}

}  // namespace baton
