// Launcher: resume decision over hand-made checkpoints, exit policy, the trainer command, and
// one whole attempt with a shell "trainer" outside SLURM.
#include "orchestrator/launcher/launcher.h"

#include <gtest/gtest.h>

#include <ctime>

#include <sstream>

#include "orchestrator/launcher/exit_policy.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "schema/checkpoint_manifest.h"
#include "schema/resume_decision.h"
#include "schema/run_folder.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::TempDir;

// checkpoint_step_<step> with the files its `kind` requires (placeholder contents) and a manifest.
std::string MakeCheckpoint(const TempDir& tmp, int64_t step, const std::string& kind = "full") {
  const std::string dir = tmp / ("checkpoints/checkpoint_step_" + std::to_string(step));
  for (const auto& f : RequiredFiles(kind)) {
    Append(dir + "/" + f, f == kStateFile ? "{\"step\": " + std::to_string(step) + "}"
                                          : "contents of " + f + " at " + std::to_string(step));
  }
  CheckpointManifest m;
  m.step = step;
  m.kind = kind;
  EXPECT_TRUE(WriteManifest(dir, m, RequiredFiles(kind)).ok());
  return dir;
}

// The launcher's request: the newest valid checkpoint, resume warmup 50 for a weights-only one.
ResumeRequest Request() {
  ResumeRequest r;
  r.resume_warmup_steps = 50;
  return r;
}

TEST(ResumeDecision, FreshWithoutCheckpoints) {
  TempDir tmp;
  ResumeDecision d = DecideResume(tmp / "checkpoints", Request()).value();
  EXPECT_EQ(d.mode, ResumeMode::kFresh);
  EXPECT_EQ(d.step0, 0);
  EXPECT_EQ(d.checkpoint, "");
  EXPECT_EQ(d.resume_warmup_steps, 0);
}

TEST(ResumeDecision, ExactFromTheNewestFullCheckpoint) {
  TempDir tmp;
  MakeCheckpoint(tmp, 100);
  const std::string newest = MakeCheckpoint(tmp, 200);
  ResumeDecision d = DecideResume(tmp / "checkpoints", Request()).value();
  EXPECT_EQ(d.mode, ResumeMode::kExact);
  EXPECT_EQ(d.step0, 200);
  EXPECT_EQ(d.checkpoint, newest);
  EXPECT_EQ(d.resume_warmup_steps, 0);
  EXPECT_TRUE(d.skipped.empty());
}

TEST(ResumeDecision, WeightsOnlyGetsTheResumeWarmup) {
  TempDir tmp;
  MakeCheckpoint(tmp, 3000, "weights_only");
  ResumeDecision d = DecideResume(tmp / "checkpoints", Request()).value();
  EXPECT_EQ(d.mode, ResumeMode::kWeightsOnly);
  EXPECT_EQ(d.step0, 3000);
  EXPECT_EQ(d.resume_warmup_steps, 50);
}

TEST(ResumeDecision, SkipsInvalidNewerCheckpointsAndSaysWhy) {
  TempDir tmp;
  const std::string good = MakeCheckpoint(tmp, 100);
  const std::string corrupt = MakeCheckpoint(tmp, 200);
  Append(corrupt + "/" + kWeightsFile, "X");  // size no longer matches
  Append(tmp / "checkpoints/checkpoint_step_300/weights.bin", "no manifest: torn save");
  Append(tmp / "checkpoints/checkpoint_step_400.partial/weights.bin", "never renamed");
  ResumeDecision d = DecideResume(tmp / "checkpoints", Request()).value();
  EXPECT_EQ(d.mode, ResumeMode::kExact);
  EXPECT_EQ(d.step0, 100);
  EXPECT_EQ(d.checkpoint, good);
  ASSERT_EQ(d.skipped.size(), 2u);
  EXPECT_NE(d.skipped[0].find("checkpoint_step_300"), std::string::npos);
  EXPECT_NE(d.skipped[1].find("checkpoint_step_200"), std::string::npos);
}

PastAttempt Attempt(int64_t step0, std::optional<int64_t> last, const std::string& action = "",
                    const std::string& reason = "") {
  PastAttempt a;
  a.step0 = step0;
  a.last_step = last;
  a.action = action;
  a.reason = reason;
  a.ended = !action.empty();
  return a;
}

ExitDecision Decide(int code, std::vector<PastAttempt> history, bool signalled = false,
                    int64_t max_restarts = 100, int64_t max_failures = 3) {
  ExitContext c;
  c.exit_code = code;
  c.stop_signalled = signalled;
  c.history = std::move(history);
  c.max_restarts = max_restarts;
  c.max_failures = max_failures;
  return DecideAfterExit(c);
}

TEST(ExitPolicy, MapsExitCodes) {
  EXPECT_EQ(Decide(0, {Attempt(0, 10)}).action, ExitAction::kDone);
  ExitDecision preempt = Decide(75, {Attempt(0, 10)});
  EXPECT_EQ(preempt.action, ExitAction::kRequeue);
  EXPECT_EQ(preempt.reason, AttemptEndReason::kPreempted);
  EXPECT_EQ(Decide(78, {Attempt(0, 0)}).reason, AttemptEndReason::kConfigError);
  EXPECT_EQ(Decide(78, {Attempt(0, 0)}).action, ExitAction::kFail);
  EXPECT_EQ(Decide(65, {Attempt(0, 0)}).reason, AttemptEndReason::kDataError);
  ExitDecision crash = Decide(139, {Attempt(0, 10)});
  EXPECT_EQ(crash.action, ExitAction::kRequeue);
  EXPECT_EQ(crash.reason, AttemptEndReason::kCrashed);
  // Killed while being stopped (e.g. SIGKILL after the grace time) counts as preempted.
  EXPECT_EQ(Decide(137, {Attempt(0, 10)}, /*signalled=*/true).reason, AttemptEndReason::kPreempted);
}

TEST(ExitPolicy, DivergedIsNeverRequeued) {
  ExitDecision d = Decide(79, {Attempt(0, 120)});
  EXPECT_EQ(d.action, ExitAction::kFail);
  EXPECT_EQ(d.reason, AttemptEndReason::kDiverged);
  EXPECT_NE(d.detail.find("exit code 79"), std::string::npos) << d.detail;
  // Not a crash: plenty of failure budget left, a history of crashes, still no requeue.
  std::vector<PastAttempt> crashes = {Attempt(0, 5, "requeue", "crashed"), Attempt(5, 9)};
  EXPECT_EQ(Decide(79, crashes, false, 100, /*max_failures=*/100).reason,
            AttemptEndReason::kDiverged);
  // Not the first attempt either: after preemptions it still fails.
  std::vector<PastAttempt> preempted = {Attempt(0, 5, "requeue", "preempted"), Attempt(5, 9)};
  EXPECT_EQ(Decide(79, preempted).action, ExitAction::kFail);
}

TEST(ExitPolicy, BrokenRunCodesWinOverAStopSignal) {
  // The trainer exits 79/65/78 after the launcher forwarded a preemption or time-limit signal:
  // the exit code says the run is broken, so it fails instead of being requeued as preempted.
  for (const auto& [code, reason] : std::vector<std::pair<int, std::string>>{
           {79, "diverged"}, {65, "data_error"}, {78, "config_error"}}) {
    ExitContext c;
    c.exit_code = code;
    c.stop_signalled = true;
    c.history = {Attempt(0, 10)};
    c.max_restarts = 100;
    c.max_failures = 3;
    ExitDecision d = DecideAfterExit(c);
    EXPECT_EQ(d.action, ExitAction::kFail) << code;
    EXPECT_EQ(Name(d.reason), reason) << code;
    c.near_time_limit = true;  // the signal came at the time limit: same answer
    EXPECT_EQ(Name(DecideAfterExit(c).reason), reason) << code;
  }
  // Any other code after a stop signal is still the preemption (the control case).
  EXPECT_EQ(Decide(80, {Attempt(0, 10)}, /*signalled=*/true).reason, AttemptEndReason::kPreempted);
}

TEST(ExitPolicy, WarningAtTheTimeLimitIsATimeoutNotAPreemption) {
  ExitContext c;
  c.exit_code = 75;
  c.stop_signalled = true;
  c.near_time_limit = true;
  c.history = {Attempt(0, 5, "requeue", "timeout"), Attempt(5, 9)};
  c.max_restarts = 2;
  ExitDecision d = DecideAfterExit(c);
  EXPECT_EQ(d.action, ExitAction::kRequeue);
  EXPECT_EQ(d.reason, AttemptEndReason::kTimeout);
  c.max_restarts = 1;  // timeouts spend the same requeue budget as preemptions
  EXPECT_EQ(DecideAfterExit(c).reason, AttemptEndReason::kRestartBudget);

  // StartTime and TimeLimit as scontrol prints them (local time).
  const std::time_t now = std::time(nullptr);
  auto fmt = [](std::time_t t) {
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
    return std::string(buf);
  };
  // Started 9 minutes ago with a 10-minute limit and a 120 s warning: the time limit.
  EXPECT_TRUE(NearTimeLimit(fmt(now - 540), "00:10:00", double(now), /*lead_s=*/120));
  // Started 1 minute ago: a preemption.
  EXPECT_FALSE(NearTimeLimit(fmt(now - 60), "00:10:00", double(now), 120));
  EXPECT_TRUE(NearTimeLimit(fmt(now - 86400 - 3500), "1-01:00:00", double(now), 120));
  EXPECT_TRUE(NearTimeLimit(fmt(now - 590), "10:00", double(now), 60));
  EXPECT_FALSE(NearTimeLimit(fmt(now - 60), "UNLIMITED", double(now), 120));
}

TEST(ExitPolicy, RestartBudgetCapsPreemptionRequeues) {
  std::vector<PastAttempt> h = {Attempt(0, 5, "requeue", "preempted"),
                                Attempt(5, 9, "requeue", "preempted"), Attempt(9, 12)};
  EXPECT_EQ(Decide(75, h, false, /*max_restarts=*/3).action, ExitAction::kRequeue);
  ExitDecision d = Decide(75, h, false, /*max_restarts=*/2);
  EXPECT_EQ(d.action, ExitAction::kFail);
  EXPECT_EQ(d.reason, AttemptEndReason::kRestartBudget);
}

TEST(ExitPolicy, FailureBudgetCountsCrashes) {
  std::vector<PastAttempt> h = {Attempt(0, 5, "requeue", "crashed"),
                                Attempt(5, 9, "requeue", "crashed"), Attempt(9, 12)};
  EXPECT_EQ(Decide(1, h, false, 100, /*max_failures=*/3).action, ExitAction::kRequeue);
  ExitDecision d = Decide(1, h, false, 100, /*max_failures=*/2);
  EXPECT_EQ(d.action, ExitAction::kFail);
  EXPECT_EQ(d.reason, AttemptEndReason::kFailureBudget);
}

TEST(ExitPolicy, CrashLoopWithoutProgressFails) {
  // Two crashes at start, and this one too: no step finished in kCrashLoopLimit attempts.
  std::vector<PastAttempt> h = {Attempt(100, std::nullopt, "requeue", "crashed"),
                                Attempt(100, 100, "requeue", "crashed"),
                                Attempt(100, std::nullopt)};
  ExitDecision d = Decide(1, h, false, 100, /*max_failures=*/10);
  EXPECT_EQ(d.action, ExitAction::kFail);
  EXPECT_EQ(d.reason, AttemptEndReason::kNoProgress);
  // Progress in between resets the streak.
  h[1].last_step = 150;
  EXPECT_EQ(Decide(1, h, false, 100, 10).action, ExitAction::kRequeue);
}

TEST(Launcher, TrainerCommandSpellsOutTheDecision) {
  LaunchEnvironment env;
  env.use_srun = true;
  env.trainer_bin = "/opt/baton-train";
  ResumeDecision d;
  d.mode = ResumeMode::kWeightsOnly;
  d.checkpoint = "/r/checkpoints/checkpoint_step_3000";
  d.step0 = 3000;
  d.resume_warmup_steps = 50;
  const std::vector<std::string> argv = TrainerCommand(env, "/r", d, "/r/events/5.2.jsonl");
  const std::vector<std::string> want = {"srun",
                                         "--kill-on-bad-exit=1",
                                         "/opt/baton-train",
                                         "train",
                                         "--config",
                                         "/r/run.yaml",
                                         "--run-dir",
                                         "/r",
                                         "--resume",
                                         "/r/checkpoints/checkpoint_step_3000",
                                         "--expect-mode",
                                         "weights_only",
                                         "--expect-step0",
                                         "3000",
                                         "--resume-warmup",
                                         "50",
                                         "--events",
                                         "/r/events/5.2.jsonl"};
  EXPECT_EQ(argv, want);
  env.use_srun = false;
  d = ResumeDecision{};
  EXPECT_EQ(TrainerCommand(env, "/r", d, "/e")[0], "/opt/baton-train");
  EXPECT_EQ(TrainerCommand(env, "/r", d, "/e")[7], "none");
}

// A whole attempt in a SLURM job (faked): the trainer checkpoints and exits 75 on USR1 —
// here it simply exits 75 — and the launcher writes both events and asks SLURM to requeue.
// Job 42's first restart inside its allocation, its trainer a shell script that writes its
// arguments to tmp/args and exits `exit_code`.
LaunchEnvironment ShellTrainerJob(const TempDir& tmp, int exit_code) {
  const std::string trainer = tmp / "trainer.sh";
  Append(trainer, "#!/bin/sh\necho \"$@\" > " + tmp.path() + "/args\nexit " +
                      std::to_string(exit_code) + "\n");
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  LaunchEnvironment env;
  env.job_id = "42";
  env.restart_count = 1;
  env.nodes = "n1";
  env.in_allocation = true;
  env.use_srun = false;
  env.trainer_bin = trainer;
  return env;
}

TEST(Launcher, RequeuesOnExit75AndRecordsTheAttempt) {
  TempDir tmp;
  Append(tmp / "data/.keep", "");
  Append(tmp / "run/run.yaml", "run: {name: t, steps: 10, dir: " + tmp.path() +
                                   "/run}\ndata: {path: " + tmp.path() +
                                   "/data}\nslurm: {max_restarts: 5}\n");
  MakeCheckpoint(tmp, 4);
  std::filesystem::rename(tmp / "checkpoints", tmp / "run/checkpoints");
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  const LaunchEnvironment env = ShellTrainerJob(tmp, 75);
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 75) << log.str();
  EXPECT_EQ(slurm.requeued, std::vector<std::string>{"42"});
  std::vector<PastAttempt> h = ReadAttemptHistory(tmp / "run");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].job_id, "42");
  EXPECT_EQ(h[0].restart_count, 1);
  EXPECT_EQ(h[0].step0, 4);
  EXPECT_EQ(h[0].action, "requeue");
  EXPECT_EQ(h[0].reason, "preempted");
  std::ifstream args(tmp / "args");
  std::string line;
  std::getline(args, line);
  EXPECT_NE(line.find("--expect-mode exact --expect-step0 4 --resume-warmup 0"), std::string::npos)
      << line;
}

// A run started from an upstream folder resumes from its own checkpoint: once that folder is
// purged, the requeued job's launcher still runs the trainer (it used to fail with 78, never
// requeued, and the run FAILED).
TEST(Launcher, ARequeueDoesNotNeedTheUpstreamFolder) {
  TempDir tmp;
  Append(tmp / "data/.keep", "");
  Append(tmp / "run/run.yaml", "run: {name: t, steps: 10, dir: " + tmp.path() +
                                   "/run}\ndata: {path: " + tmp.path() +
                                   "/data}\nmodel: {init_from: " + tmp.path() + "/purged}\n");
  MakeCheckpoint(tmp, 4);
  std::filesystem::rename(tmp / "checkpoints", tmp / "run/checkpoints");
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  const LaunchEnvironment env = ShellTrainerJob(tmp, 0);
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 0) << log.str();
  std::ifstream args(tmp / "args");
  std::string line;
  std::getline(args, line);
  EXPECT_NE(line.find("--expect-mode exact --expect-step0 4"), std::string::npos) << line;
}

TEST(Launcher, DoesNotRequeueAJobSlurmAlreadyRequeued) {
  TempDir tmp;
  Append(tmp / "data/.keep", "");
  Append(tmp / "run/run.yaml",
         "run: {name: t, steps: 10}\ndata: {path: " + tmp.path() + "/data}\n");
  const std::string trainer = tmp / "trainer.sh";
  Append(trainer, "#!/bin/sh\nexit 75\n");
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  FakeSlurmClient slurm;
  slurm.SetState("42", "PENDING", "BeginTime");
  LaunchEnvironment env;
  env.job_id = "42";
  env.in_allocation = true;
  env.trainer_bin = trainer;
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 75);
  EXPECT_TRUE(slurm.requeued.empty()) << log.str();
}

TEST(Launcher, ConfigErrorIsNeverRequeued) {
  TempDir tmp;
  Append(tmp / "data/.keep", "");
  Append(tmp / "run/run.yaml",
         "run: {name: t, steps: 10}\ndata: {path: " + tmp.path() + "/data}\n");
  const std::string trainer = tmp / "trainer.sh";
  Append(trainer, "#!/bin/sh\nexit 78\n");
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  LaunchEnvironment env;
  env.job_id = "42";
  env.in_allocation = true;
  env.trainer_bin = trainer;
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 78);
  EXPECT_TRUE(slurm.requeued.empty());
  EXPECT_EQ(ReadAttemptHistory(tmp / "run")[0].reason, "config_error");
}

// `baton cancel` writes the mark, then scancel's TERM reaches the trainer, which checkpoints and
// exits 75 as on a preemption: the mark turns that into the end of the run, never a requeue.
TEST(Launcher, ExitOnACancelIsNeverRequeued) {
  TempDir tmp;
  Append(tmp / "data/.keep", "");
  Append(tmp / "run/run.yaml", "run: {name: t, steps: 10}\ndata: {path: " + tmp.path() +
                                   "/data}\nslurm: {max_restarts: 5}\n");
  const std::string trainer = tmp / "trainer.sh";
  // The mark lands while the trainer runs (before the TERM), as `baton cancel` writes it.
  Append(trainer,
         "#!/bin/sh\necho cancelled > " + RunFolder{tmp / "run"}.CancelMark() + "\nexit 75\n");
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  LaunchEnvironment env;
  env.job_id = "42";
  env.in_allocation = true;
  env.trainer_bin = trainer;
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 75) << log.str();
  EXPECT_TRUE(slurm.requeued.empty()) << log.str();
  const std::vector<PastAttempt> h = ReadAttemptHistory(tmp / "run");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].action, "fail");
  EXPECT_EQ(h[0].reason, "cancelled");
}

// A job of a cancelled run that starts anyway (requeued by a preemption just before the cancel)
// does not train: it records a cancelled attempt and ends.
TEST(Launcher, ACancelledRunDoesNotTrainAgain) {
  TempDir tmp;
  Append(tmp / "data/.keep", "");
  Append(tmp / "run/run.yaml",
         "run: {name: t, steps: 10}\ndata: {path: " + tmp.path() + "/data}\n");
  Append(RunFolder{tmp / "run"}.CancelMark(), "cancelled\n");
  const std::string trainer = tmp / "trainer.sh";
  Append(trainer, "#!/bin/sh\ntouch " + tmp.path() + "/trained\nexit 0\n");
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  LaunchEnvironment env;
  env.job_id = "42";
  env.restart_count = 1;
  env.in_allocation = true;
  env.trainer_bin = trainer;
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 0) << log.str();
  EXPECT_FALSE(std::filesystem::exists(tmp / "trained"));
  EXPECT_TRUE(slurm.requeued.empty());
  const std::vector<PastAttempt> h = ReadAttemptHistory(tmp / "run");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].reason, "cancelled");
  EXPECT_NE(log.str().find("cancelled"), std::string::npos) << log.str();
}

}  // namespace
}  // namespace baton
