#include "orchestrator/launcher/launcher.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "orchestrator/launcher/attempt_history.h"
#include "orchestrator/launcher/exit_policy.h"
#include "orchestrator/launcher/hang_response.h"
#include "orchestrator/launcher/hang_watch.h"
#include "orchestrator/launcher/node_checks.h"
#include "orchestrator/launcher/run_folder_checks.h"
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

// The launcher's exit code when the job start ends where it is returned; nullopt when it goes on.
using Ending = std::optional<int>;

// One job start: what Launch was given, and what each trainer leaves for the next one started
// inside the same allocation.
struct JobStart {
  JobStart(std::string dir, const LaunchEnvironment& e, SlurmClient& s, std::ostream& l)
      : run_dir(std::move(dir)), env(e), slurm(s), log(l) {}

  std::string run_dir;  // absolute
  const LaunchEnvironment& env;
  SlurmClient& slurm;
  std::ostream& log;
  int64_t seq = 0;                           // restarts of the trainer inside this job start
  RestartCause cause = RestartCause::kNone;  // why trainer `seq` is a restart
  int64_t stalled_restarts = 0;
  // The decision made when the last trainer ended, for the restart that follows it.
  std::optional<Result<ResumeDecision>> next_decision;
};

// One trainer of a job start: its events file, and the config and decision it starts with.
struct Attempt {
  std::string events_path;
  EventWriter events;
  RunConfig config;
  ResumeRequest request;
  ResumeDecision decision;
};

// How the watched trainer ended: its exit, and the hang the watch acted on, if it did.
struct WatchedExit {
  TrainerExit trainer;
  std::optional<HangReport> hang;
  std::string stacks;
};

// A trainer that ended on a failure ends the job start with its own code, one that exited 0
// with the generic failure.
int FailureCode(int exit_code) { return exit_code != 0 ? exit_code : kExitFailure; }

// attempt_end. A write that fails is logged: the job start's outcome is already decided.
void WriteEnd(const JobStart& job, Attempt& a, int exit_code, ExitAction action,
              AttemptEndReason reason, const WatchedExit* watched = nullptr) {
  AttemptEndEvent e;
  e.job_id = job.env.job_id;
  e.restart_count = job.env.restart_count;
  e.exit_code = exit_code;
  e.action = Name(action);
  e.reason = Name(reason);
  e.in_job_seq = job.seq;
  if (watched != nullptr && watched->hang) {
    e.hang_detected_at = watched->hang->detected_at;
    e.hang_last_heartbeat_at = watched->hang->last_heartbeat_at;
    e.hang_stale_ranks = watched->hang->StaleRanksText();
    e.hang_stack = watched->stacks;
  }
  if (Status st = a.events.Write(e, /*sync=*/true); !st.ok()) {
    job.log << "baton launch: " << st.ToString() << "\n";
  }
}

// An attempt that cannot go on: the error logged, the attempt failed for `reason`, and the job
// start ended with the error's exit code.
int EndOnError(const JobStart& job, Attempt& a, const Status& st, AttemptEndReason reason) {
  job.log << "baton launch: " << st.ToString() << "\n";
  WriteEnd(job, a, st.exit_code(), ExitAction::kFail, reason);
  return st.exit_code();
}

// 2. The resume decision (after a restart in the job: the one made when the last trainer ended),
// logged and written as attempt_start.
Ending DecideStart(JobStart& job, Attempt& a) {
  a.request.resume_warmup_steps = a.config.optim.resume_warmup_steps;
  Result<ResumeDecision> decision =
      job.next_decision ? std::move(*job.next_decision)
                        : DecideResume(RunFolder{job.run_dir}.CheckpointsDir(), a.request);
  job.next_decision.reset();
  if (!decision.ok()) return EndOnError(job, a, decision.status(), AttemptEndReason::kDataError);
  a.decision = std::move(decision).value();
  const ResumeDecision& d = a.decision;
  for (const std::string& s : d.skipped) {
    job.log << "baton launch: skipping invalid checkpoint " << s << "\n";
  }
  job.log << "baton launch: "
          << (job.seq > 0
                  ? "in-job restart " + std::to_string(job.seq) + " (" + Name(job.cause) + "): "
                  : "")
          << "mode " << Name(d.mode) << ", step0 " << d.step0 << ", resume warmup "
          << d.resume_warmup_steps << (d.checkpoint.empty() ? "" : ", from " + d.checkpoint)
          << "\n";
  AttemptStartEvent start;
  start.job_id = job.env.job_id;
  start.restart_count = job.env.restart_count;
  start.nodes = job.env.nodes;
  if (!d.checkpoint.empty()) start.checkpoint = d.checkpoint;
  start.mode = Name(d.mode);
  start.step0 = d.step0;
  start.resume_warmup_steps = d.resume_warmup_steps;
  start.skipped_checkpoints = d.skipped;
  start.in_job_seq = job.seq;
  start.restart_cause = Name(job.cause);
  if (Status st = a.events.Write(start, /*sync=*/true); !st.ok()) {
    job.log << "baton launch: " << st.ToString() << "\n";
    return st.exit_code();
  }
  return std::nullopt;
}

// 0-2: the attempt's events file, the cancel mark, the frozen config, then the decision.
Ending StartAttempt(JobStart& job, Attempt& a) {
  a.events_path = RunFolder{job.run_dir}.EventsFile(job.env.job_id, job.env.restart_count, job.seq);
  if (Status st = a.events.Open(a.events_path, "launcher"); !st.ok()) {
    job.log << "baton launch: " << st.ToString() << "\n";
    return st.exit_code();
  }
  // 0. A cancelled run never trains again: a job that was requeued (by a preemption) before
  // the cancel reached it, and then started, ends here.
  if (CancelRequested(job.run_dir)) {
    job.log << "baton launch: the run was cancelled (" << RunFolder{job.run_dir}.CancelMark()
            << "); not training\n";
    WriteEnd(job, a, kExitOk, ExitAction::kFail, AttemptEndReason::kCancelled);
    return kExitOk;
  }
  // 1. The frozen config. A broken one is never requeued. model.init_from is not looked at: a
  // requeued run resumes from its own checkpoint, and the trainer checks the upstream folder
  // itself on a fresh start (an upstream folder purged since submit must not fail a requeue).
  RunConfigOptions config_options;
  config_options.check_init_from = false;
  Result<RunConfig> config = LoadRunConfig(RunFolder{job.run_dir}.RunYaml(), config_options);
  if (!config.ok()) {
    return EndOnError(job, a, config.status(),
                      config.status().code() == Code::kConfig ? AttemptEndReason::kConfigError
                                                              : AttemptEndReason::kDataError);
  }
  a.config = std::move(config).value();
  return DecideStart(job, a);
}

// 3. The trainer, watched through its ranks' heartbeats. Every node checks itself first
// (node_checks.h); a failed one ends the attempt unhealthy, the trainer never started.
Ending RunWatched(JobStart& job, Attempt& a, WatchedExit* out) {
  const LaunchEnvironment& env = job.env;
  if (env.trainer_bin.empty()) {
    job.log << "baton launch: no trainer binary (set BATON_TRAIN_BIN or install baton-train next "
               "to baton)\n";
    WriteEnd(job, a, kExitUnavailable, ExitAction::kFail, AttemptEndReason::kLaunchError);
    return kExitUnavailable;
  }
  const std::vector<std::string> argv = TrainerCommand(env, job.run_dir, a.decision, a.events_path);
  job.log << "baton launch: " << CommandLine(argv) << "\n" << std::flush;
  ClearHeartbeats(job.run_dir);
  HangLimits limits;
  limits.min_s = a.config.train.hang_min_s;
  limits.factor = a.config.train.hang_factor;
  limits.first_step_s = a.config.train.first_step_timeout_s;
  const int64_t ranks = env.use_srun ? a.config.slurm.nodes * a.config.slurm.ntasks_per_node : 1;
  HangWatch watch(job.run_dir, ranks, a.decision.step0, MonotonicNow(), limits);
  HangResponse hang(watch, {env.job_id, env.use_srun, 0, ThisHost()}, job.log);
  StragglerWatch stragglers;
  const bool healthy = PreflightPasses(env, job.run_dir, a.config.slurm.nodes, job.seq, job.log);
  Result<TrainerExit> exit =
      healthy ? RunTrainerProcess(argv, LogSignal,
                                  [&](int pid) {
                                    ObserveStragglers(watch, ranks, &stragglers);
                                    return hang(pid);
                                  })
              : Result<TrainerExit>(TrainerExit{kExitNodeUnhealthy, 0, {}, false});
  if (!exit.ok()) return EndOnError(job, a, exit.status(), AttemptEndReason::kLaunchError);
  job.log << "baton launch: trainer exited with code " << exit->exit_code
          << (hang.report ? " (ended on a hang)" : "") << "\n";
  RecordLauncherIncidents(env, job.run_dir, job.seq, hang.report ? &*hang.report : nullptr,
                          exit->exit_code, job.log);
  RecordStragglers(env, job.run_dir, job.seq, stragglers.found(), job.log);
  *out = WatchedExit{std::move(exit).value(), hang.report, hang.stacks};
  return std::nullopt;
}

// 4a. A restart inside the allocation (action restart), its refusal (fail: no progress), or
// nullopt: the exit policy decides. A restart's resume decision is left in `job`.
std::optional<ExitDecision> InJobRestart(JobStart& job, const Attempt& a, const WatchedExit& exit) {
  job.cause = RestartCauseOf(exit.trainer.exit_code, !exit.trainer.forwarded.empty(),
                             exit.hang.has_value());
  if (job.cause == RestartCause::kNone || CancelRequested(job.run_dir)) return std::nullopt;
  job.next_decision = DecideResume(RunFolder{job.run_dir}.CheckpointsDir(), a.request);
  const bool advanced = job.next_decision->ok() && (*job.next_decision)->step0 > a.decision.step0;
  if (job.seq > 0) job.stalled_restarts = advanced ? 0 : job.stalled_restarts + 1;
  InJobContext in_job;
  in_job.cause = job.cause;
  in_job.in_job_seq = job.seq;
  in_job.in_job_restarts = a.config.slurm.in_job_restarts;
  in_job.stalled_restarts = job.stalled_restarts;
  std::optional<ExitDecision> d = DecideInJobRestart(in_job);
  if (!d) job.next_decision.reset();
  return d;
}

// SLURM's record of this job, asked for at most once per trainer exit: its start and time limit
// tell a preemption from the time limit, and its state whether SLURM requeued the job itself.
// Only a job start in an allocation asks.
class JobRecord {
 public:
  explicit JobRecord(const JobStart& job) : job_(job) {}

  // nullptr when SLURM could not be asked or no longer knows the job.
  const JobInfo* Get() {
    if (!asked_) {
      asked_ = true;
      Result<std::optional<JobInfo>> r = job_.slurm.GetJob(job_.env.job_id);
      if (r.ok()) info_ = std::move(r).value();
    }
    return info_ ? &*info_ : nullptr;
  }

 private:
  const JobStart& job_;
  bool asked_ = false;
  std::optional<JobInfo> info_;
};

// 4b. The exit policy (exit_policy.h) over the run's history, told what only SLURM and the
// cancel mark know: whether the warning signal came at the job's time limit, whether the stop
// was `baton cancel`'s.
ExitDecision DecideByPolicy(const JobStart& job, const Attempt& a, const WatchedExit& exit,
                            JobRecord& record) {
  ExitContext ctx;
  ctx.exit_code = exit.trainer.exit_code;
  ctx.hang = exit.hang.has_value();
  ctx.stop_signalled = !exit.trainer.forwarded.empty();
  ctx.history = ReadAttemptHistory(job.run_dir);
  if (ctx.history.empty() || ctx.history.back().events_path != a.events_path) {
    PastAttempt self;  // should not happen: our own file is there
    self.events_path = a.events_path;
    self.step0 = a.decision.step0;
    ctx.history.push_back(self);
  }
  ctx.max_restarts = a.config.slurm.max_restarts;
  ctx.max_failures = a.config.slurm.max_failures;
  if (ctx.stop_signalled && job.env.in_allocation) {
    // The same warning signal announces a preemption and the time limit; the limit tells them
    // apart.
    const JobInfo* info = record.Get();
    if (info != nullptr && info->fields.count("StartTime") && info->fields.count("TimeLimit")) {
      ctx.near_time_limit =
          NearTimeLimit(info->fields.at("StartTime"), info->fields.at("TimeLimit"), UnixTimeNow(),
                        a.config.slurm.signal_lead_s);
    }
  }
  ExitDecision next = DecideAfterExit(ctx);
  // scancel's TERM looks like a preemption to the trainer (it checkpoints and exits 75); the
  // mark tells them apart.
  if (next.action == ExitAction::kRequeue && CancelRequested(job.run_dir)) {
    next = {
        ExitAction::kFail, AttemptEndReason::kCancelled,
        "cancelled by `baton cancel` (" + RunFolder{job.run_dir}.CancelMark() + "); not requeued"};
  }
  return next;
}

// 4c. SLURM's word on a requeue the policy chose: a job SLURM cancelled is not requeued (`next`
// becomes the failure), and one it already requeued itself ends the job start here.
Ending CheckSlurmRequeue(const JobStart& job, Attempt& a, const WatchedExit& exit,
                         JobRecord& record, ExitDecision* next) {
  if (next->action != ExitAction::kRequeue || !job.env.in_allocation) return std::nullopt;
  const JobInfo* info = record.Get();
  const std::string state = info != nullptr ? info->state : "";
  const JobState s = ParseJobState(state);
  if (s == JobState::kCancelled) {
    *next = {ExitAction::kFail, AttemptEndReason::kCancelled,
             "the job was cancelled; not requeued"};
  } else if (RequeuedBySlurm(s)) {
    job.log << "baton launch: " << next->detail << "; SLURM already requeued job " << job.env.job_id
            << " (" << state << ")\n";
    WriteEnd(job, a, exit.trainer.exit_code, next->action, next->reason, &exit);
    return kExitRequeue;
  }
  return std::nullopt;
}

// 4d. The decision carried out: attempt_end first (`scontrol requeue` may kill this script
// before it returns), then done, fail, or the requeue.
int Act(const JobStart& job, Attempt& a, const WatchedExit& exit, const ExitDecision& next) {
  job.log << "baton launch: " << Name(next.action) << " (" << Name(next.reason)
          << "): " << next.detail << "\n";
  WriteEnd(job, a, exit.trainer.exit_code, next.action, next.reason, &exit);
  if (next.action == ExitAction::kDone) return kExitOk;
  if (next.action == ExitAction::kFail) return FailureCode(exit.trainer.exit_code);
  if (!job.env.in_allocation) {
    job.log << "baton launch: not inside a SLURM job; nothing to requeue\n";
    return kExitRequeue;
  }
  Status st = job.slurm.Requeue(job.env.job_id);
  if (!st.ok()) {
    job.log << "baton launch: requeue failed: " << st.ToString() << "\n";
    WriteEnd(job, a, exit.trainer.exit_code, ExitAction::kFail, AttemptEndReason::kRequeueFailed);
    return st.exit_code();
  }
  job.log << "baton launch: requeued job " << job.env.job_id << "\n";
  return kExitRequeue;
}

// 4. What next: a restart inside the allocation, else the exit policy, asking SLURM once.
Ending NextAfterExit(JobStart& job, Attempt& a, const WatchedExit& exit) {
  if (std::optional<ExitDecision> d = InJobRestart(job, a, exit)) {
    job.log << "baton launch: " << Name(d->action) << " (" << Name(d->reason) << "): " << d->detail
            << "\n"
            << std::flush;
    WriteEnd(job, a, exit.trainer.exit_code, d->action, d->reason, &exit);
    if (d->action == ExitAction::kFail) return FailureCode(exit.trainer.exit_code);
    ++job.seq;
    return std::nullopt;
  }
  JobRecord record(job);
  ExitDecision next = DecideByPolicy(job, a, exit, record);
  if (Ending end = CheckSlurmRequeue(job, a, exit, record, &next)) return end;
  return Act(job, a, exit, next);
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
  JobStart job(run_dir, env, slurm, log);
  while (true) {
    Attempt attempt;
    if (Ending end = StartAttempt(job, attempt)) return *end;
    WatchedExit exit;
    if (Ending end = RunWatched(job, attempt, &exit)) return *end;
    if (Ending end = NextAfterExit(job, attempt, exit)) return *end;
  }
}

}  // namespace baton
