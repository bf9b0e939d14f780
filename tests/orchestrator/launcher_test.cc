// Launcher: resume decision over hand-made checkpoints, the trainer command, and one whole
// attempt with a shell "trainer" outside SLURM (the exit policy alone: exit_policy_test.cc).
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

TEST(Launcher, TrainerCommandSpellsOutTheDecision) {
  LaunchEnvironment env;
  env.use_srun = true;
  env.trainer_bin = "/opt/baton-train";
  ResumeDecision d;
  d.mode = ResumeMode::kWeightsOnly;
  d.checkpoint = "/r/checkpoints/checkpoint_step_3000";
  d.step0 = 3000;
  d.resume_warmup_steps = 50;
  const std::vector<std::string> argv =
      TrainerCommand(env, "/r", d, RunFolder{"/r"}.EventsFile("5", 2));
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
                                         RunFolder{"/r"}.EventsFile("5", 2)};
  EXPECT_EQ(argv, want);
  env.use_srun = false;
  d = ResumeDecision{};
  EXPECT_EQ(TrainerCommand(env, "/r", d, "/e")[0], "/opt/baton-train");
  EXPECT_EQ(TrainerCommand(env, "/r", d, "/e")[7], "none");
}

// The launcher tests' run folder: tmp/run/run.yaml (10 steps) over tmp/data, an empty dataset
// folder, with the YAML lines `extra` after them.
void WriteRunFolder(const TempDir& tmp, const std::string& extra = "") {
  Append(tmp / "data/.keep", "");
  Append(tmp / "run/run.yaml", "run: {name: t, steps: 10, dir: " + tmp.path() +
                                   "/run}\ndata: {path: " + tmp.path() + "/data}\n" + extra);
}

// Job 42 inside its allocation, without srun, its trainer tmp/trainer.sh: `body` under /bin/sh.
LaunchEnvironment ShellJob(const TempDir& tmp, const std::string& body) {
  const std::string trainer = tmp / "trainer.sh";
  Append(trainer, "#!/bin/sh\n" + body);
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  LaunchEnvironment env;
  env.job_id = "42";
  env.in_allocation = true;
  env.trainer_bin = trainer;
  return env;
}

// A whole attempt in a SLURM job (faked): the trainer checkpoints and exits 75 on USR1 —
// here it simply exits 75 — and the launcher writes both events and asks SLURM to requeue.
// Job 42's first restart inside its allocation, its trainer a shell script that writes its
// arguments to tmp/args and exits `exit_code`.
LaunchEnvironment ShellTrainerJob(const TempDir& tmp, int exit_code) {
  LaunchEnvironment env = ShellJob(
      tmp, "echo \"$@\" > " + tmp.path() + "/args\nexit " + std::to_string(exit_code) + "\n");
  env.restart_count = 1;
  env.nodes = "n1";
  return env;
}

TEST(Launcher, RequeuesOnExit75AndRecordsTheAttempt) {
  TempDir tmp;
  WriteRunFolder(tmp, "slurm: {max_restarts: 5}\n");
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
  WriteRunFolder(tmp, "model: {init_from: " + tmp.path() + "/purged}\n");
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
  WriteRunFolder(tmp);
  FakeSlurmClient slurm;
  slurm.SetState("42", "PENDING", "BeginTime");
  const LaunchEnvironment env = ShellJob(tmp, "exit 75\n");
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 75);
  EXPECT_TRUE(slurm.requeued.empty()) << log.str();
}

// A stopped trainer's exit needs SLURM twice: the time limit (was it a preemption?) and the state
// (did SLURM requeue the job itself?). The launcher asks once and reads both from that answer.
TEST(Launcher, AsksSlurmOncePerExit) {
  TempDir tmp;
  WriteRunFolder(tmp, "slurm: {max_restarts: 5}\n");
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  // The warning signal as SLURM sends it, to the launcher, which forwards it to the trainer.
  const LaunchEnvironment env =
      ShellJob(tmp, "trap 'exit 75' USR1\nkill -USR1 $PPID\nwhile :; do sleep 0.1; done\n");
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 75) << log.str();
  EXPECT_EQ(slurm.job_queries, 1) << log.str();
  EXPECT_EQ(slurm.requeued, std::vector<std::string>{"42"}) << log.str();
  const std::vector<PastAttempt> h = ReadAttemptHistory(tmp / "run");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].reason, "preempted");
}

TEST(Launcher, ConfigErrorIsNeverRequeued) {
  TempDir tmp;
  WriteRunFolder(tmp);
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  const LaunchEnvironment env = ShellJob(tmp, "exit 78\n");
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 78);
  EXPECT_TRUE(slurm.requeued.empty());
  EXPECT_EQ(ReadAttemptHistory(tmp / "run")[0].reason, "config_error");
}

// `baton cancel` writes the mark, then scancel's TERM reaches the trainer, which checkpoints and
// exits 75 as on a preemption: the mark turns that into the end of the run, never a requeue.
TEST(Launcher, ExitOnACancelIsNeverRequeued) {
  TempDir tmp;
  WriteRunFolder(tmp, "slurm: {max_restarts: 5}\n");
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  // The mark lands while the trainer runs (before the TERM), as `baton cancel` writes it.
  const LaunchEnvironment env =
      ShellJob(tmp, "echo cancelled > " + RunFolder{tmp / "run"}.CancelMark() + "\nexit 75\n");
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
  WriteRunFolder(tmp);
  Append(RunFolder{tmp / "run"}.CancelMark(), "cancelled\n");
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  LaunchEnvironment env = ShellJob(tmp, "touch " + tmp.path() + "/trained\nexit 0\n");
  env.restart_count = 1;
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
