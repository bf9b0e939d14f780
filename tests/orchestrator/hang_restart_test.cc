// Hangs and restarts inside the allocation: the heartbeat record, the hang watch's budgets, the
// in-job restart policy, the stack-capture commands, events files per restart, the store's
// attempts per in-job restart, and whole launches with a shell "trainer" (no SLURM).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "orchestrator/ingest/event_ingester.h"
#include "orchestrator/launcher/attempt_history.h"
#include "orchestrator/launcher/exit_policy.h"
#include "orchestrator/launcher/hang_watch.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/launcher/stack_capture.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "schema/heartbeat_record.h"
#include "schema/run_folder.h"
#include "test_util.h"
#include "tests/unit/vocabulary_checks.h"

namespace baton {
namespace {

using test::Append;
using test::TempDir;

HeartbeatRecord Beat(int64_t rank, HeartbeatPhase phase, int64_t step, double wall,
                     double step_s = 0, double budget_s = 0) {
  HeartbeatRecord b;
  b.rank = rank;
  b.pid = 1000 + rank;
  b.host = "h1";
  b.node = "n1";
  b.phase = phase;
  b.step = step;
  b.wall = wall;
  b.step_s = step_s;
  b.budget_s = budget_s;
  return b;
}

TEST(Heartbeat, RoundTripsAndRefusesATornRecord) {
  HeartbeatRecord b = Beat(3, HeartbeatPhase::kSave, 40, 1764600000.25, 0.125, 90);
  b.host = "gpu node/7";  // odd bytes become '_'
  const std::string text = FormatHeartbeat(b);
  ASSERT_EQ(text.size(), kHeartbeatRecordBytes);
  const std::optional<HeartbeatRecord> r = ParseHeartbeat(text);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->pid, 1003);
  EXPECT_EQ(r->host, "gpu_node_7");
  EXPECT_EQ(r->phase, HeartbeatPhase::kSave);
  EXPECT_EQ(r->step, 40);
  EXPECT_DOUBLE_EQ(r->wall, 1764600000.25);
  EXPECT_DOUBLE_EQ(r->budget_s, 90);
  EXPECT_DOUBLE_EQ(r->step_s, 0.125);
  // A record cut before " end" (a read racing a write), or of another size, is none.
  std::string torn = text;
  torn.replace(text.find(" end"), 4, "    ");
  EXPECT_FALSE(ParseHeartbeat(torn));
  EXPECT_FALSE(ParseHeartbeat(text.substr(0, 100)));
  EXPECT_FALSE(ParseHeartbeat(std::string(kHeartbeatRecordBytes, ' ')));
  EXPECT_EQ(Name(HeartbeatPhase::kMicroStep), std::string("micro-step"));
  test::ExpectEveryWordParsesBack<HeartbeatPhase>("heartbeat phase");
  EXPECT_EQ(std::size(Vocabulary<HeartbeatPhase>::kWords), size_t(HeartbeatPhase::kSave) + 1);
}

TEST(Heartbeat, EventsFilesOfInJobRestartsSortAfterTheirJobStart) {
  EXPECT_EQ(EventsFileName("42", 1, 0), "42.1.jsonl");
  EXPECT_EQ(EventsFileName("42", 1, 2), "42.1.2.jsonl");
  std::string job;
  int64_t restart = -1, seq = -1;
  ASSERT_TRUE(ParseEventsFileName("42.1.2.jsonl", &job, &restart, &seq));
  EXPECT_EQ(job, "42");
  EXPECT_EQ(restart, 1);
  EXPECT_EQ(seq, 2);
  ASSERT_TRUE(ParseEventsFileName("local-9.0.jsonl", &job, &restart, &seq));
  EXPECT_EQ(job, "local-9");
  EXPECT_EQ(seq, 0);
  EXPECT_FALSE(ParseEventsFileName("42.1.0.jsonl", &job, &restart, &seq));  // seq 0: plain name
  EXPECT_FALSE(ParseEventsFileName("42.x.2.jsonl", &job, &restart, &seq));
  TempDir tmp;
  for (const char* f : {"42.1.jsonl", "42.0.2.jsonl", "42.0.jsonl", "42.0.1.jsonl", "9.0.jsonl"})
    Append(RunFolder{tmp.path()}.EventsDir() + "/" + f, "");
  std::vector<std::string> names;
  for (const std::string& p : RunFolder{tmp.path()}.ListEventFiles())
    names.push_back(std::filesystem::path(p).filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"9.0.jsonl", "42.0.jsonl", "42.0.1.jsonl",
                                             "42.0.2.jsonl", "42.1.jsonl"}));
  EXPECT_EQ(RunFolder{"/r"}.HeartbeatFile(3), "/r/heartbeat/rank-00003");
}

HangLimits Limits() {
  HangLimits l;
  l.min_s = 10;
  l.factor = 5;
  l.first_step_s = 100;
  return l;
}

// What the watch reads of rank b.rank's file: the record, in one file per rank.
HeartbeatFileRead Read(const HeartbeatRecord& b) {
  HeartbeatFileRead r;
  r.kind = HeartbeatFileRead::kRecord;
  r.beat = b;
  r.dev = 1;
  r.ino = ino_t(100 + b.rank);
  return r;
}

// The records read at `now` (the watch's clock), then the verdict at `now`.
std::optional<HangReport> SeeAndJudge(HangWatch& w, const std::vector<HeartbeatRecord>& beats,
                                      double now, std::ostream& log) {
  std::map<int64_t, HeartbeatFileRead> reads;
  for (const HeartbeatRecord& b : beats) reads[b.rank] = Read(b);
  w.Observe(reads, now, log);
  return w.Judge(now, log);
}

TEST(HangWatch, TheFirstStepHasItsOwnBudget) {
  std::ostringstream log;
  HangWatch w("/none", 2, /*step0=*/20, /*started_at=*/1000, Limits());
  SeeAndJudge(w, {Beat(0, HeartbeatPhase::kInit, 0, 1001)}, 1001, log);
  SeeAndJudge(w, {Beat(1, HeartbeatPhase::kMicroStep, 20, 1002)}, 1002, log);
  EXPECT_FALSE(w.Judge(1090, log));  // 89 s: within first_step_timeout_s 100
  std::optional<HangReport> r = w.Judge(1101.5, log);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->stale.size(), 1u);  // rank 1's record changed 99.5 s ago
  EXPECT_EQ(r->stale[0].beat.rank, 0);
  EXPECT_EQ(r->StaleRanksText(), "0:init");
  EXPECT_DOUBLE_EQ(r->last_heartbeat_at, 1001);
  EXPECT_NE(log.str().find("train.first_step_timeout_s"), std::string::npos) << log.str();
}

TEST(HangWatch, LaterStepsAreJudgedByMinOrFactorTimesP99) {
  std::ostringstream log;
  HangWatch w("/none", 1, 0, 1000, Limits());
  // Steps of 1 s: the limit is hang_min_s 10.
  for (int s = 1; s <= 5; ++s) {
    EXPECT_FALSE(
        SeeAndJudge(w, {Beat(0, HeartbeatPhase::kMicroStep, s, 1000 + s, 1.0)}, 1000 + s, log));
  }
  EXPECT_DOUBLE_EQ(w.P99StepS(), 1.0);
  EXPECT_FALSE(SeeAndJudge(w, {Beat(0, HeartbeatPhase::kUpdate, 5, 1005, 1.0)}, 1005, log));
  EXPECT_FALSE(w.Judge(1014.9, log));
  EXPECT_TRUE(w.Judge(1015.1, log));
  // A 4 s step: 5 x p99 = 20 s.
  EXPECT_FALSE(SeeAndJudge(w, {Beat(0, HeartbeatPhase::kMicroStep, 6, 1020, 4.0)}, 1020, log));
  EXPECT_FALSE(w.Judge(1039, log));
  EXPECT_DOUBLE_EQ(w.P99StepS(), 4.0);
  EXPECT_TRUE(w.Judge(1040.5, log));
}

TEST(HangWatch, ASlowSaveOrLoadIsJudgedByItsBudget) {
  std::ostringstream log;
  HangWatch w("/none", 1, 0, 1000, Limits());
  SeeAndJudge(w, {Beat(0, HeartbeatPhase::kMicroStep, 3, 1003, 1.0)}, 1003, log);
  // Budget 300 s written by the rank.
  SeeAndJudge(w, {Beat(0, HeartbeatPhase::kSave, 4, 1004, 1.0, 300)}, 1004, log);
  EXPECT_FALSE(w.Judge(1300, log));
  EXPECT_TRUE(w.Judge(1305, log));
  // A tiny load budget is still at least the first step's (a load comes before it).
  HangWatch w2("/none", 1, 0, 1000, Limits());
  SeeAndJudge(w2, {Beat(0, HeartbeatPhase::kLoad, 0, 1000, 0, 2)}, 1000, log);
  EXPECT_FALSE(w2.Judge(1059, log));
  EXPECT_TRUE(w2.Judge(1101, log));
}

TEST(HangWatch, AMissingHeartbeatIsNeverAHangButIsLogged) {
  std::ostringstream log;
  TempDir tmp;
  // A file from an earlier trainer, there when the watch starts, counts as none.
  Append(RunFolder{tmp.path()}.HeartbeatFile(0),
         FormatHeartbeat(Beat(0, HeartbeatPhase::kMicroStep, 5, 900)));
  HangWatch w(tmp.path(), 2, 0, 1000, Limits());
  EXPECT_FALSE(w.Poll(5000, log));
  EXPECT_NE(log.str().find("no heartbeat from rank(s) 0, 1"), std::string::npos) << log.str();
  // A current one is judged from when the watch first saw it.
  std::filesystem::remove(RunFolder{tmp.path()}.HeartbeatFile(0));
  Append(RunFolder{tmp.path()}.HeartbeatFile(0),
         FormatHeartbeat(Beat(0, HeartbeatPhase::kMicroStep, 0, 1001)));
  EXPECT_FALSE(w.Poll(6000, log));
  std::optional<HangReport> r = w.Poll(6101, log);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->StaleRanksText(), "0:micro-step");
}

TEST(InJobRestart, OnlyHangsAndCrashesNotTheRunsFaultAreRestarted) {
  EXPECT_EQ(RestartCauseOf(137, false, false), RestartCause::kCrash);  // SIGKILL
  EXPECT_EQ(RestartCauseOf(139, false, false), RestartCause::kCrash);  // SIGSEGV
  EXPECT_EQ(RestartCauseOf(70, false, false), RestartCause::kCrash);   // a lost peer
  EXPECT_EQ(RestartCauseOf(137, false, true), RestartCause::kHang);
  for (int final_code : {0, 1, 65, 74, 75, 78, 79})
    EXPECT_EQ(RestartCauseOf(final_code, false, false), RestartCause::kNone) << final_code;
  EXPECT_EQ(RestartCauseOf(137, /*stop_signalled=*/true, false), RestartCause::kNone);
}

TEST(InJobRestart, BudgetThenExitPolicyAndNoProgressGuard) {
  InJobContext c;
  c.cause = RestartCause::kHang;
  c.in_job_restarts = 2;
  std::optional<ExitDecision> d = DecideInJobRestart(c);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->action, ExitAction::kRestart);
  EXPECT_EQ(d->reason, AttemptEndReason::kHang);
  c.in_job_seq = 2;  // the budget is spent: the exit policy decides
  EXPECT_FALSE(DecideInJobRestart(c));
  c.in_job_seq = 1;
  c.cause = RestartCause::kCrash;
  c.stalled_restarts = 1;
  EXPECT_EQ(DecideInJobRestart(c)->reason, AttemptEndReason::kCrashed);
  c.stalled_restarts = 2;  // two restarts in a row without a newer checkpoint
  EXPECT_EQ(DecideInJobRestart(c)->action, ExitAction::kFail);
  EXPECT_EQ(DecideInJobRestart(c)->reason, AttemptEndReason::kNoProgress);
  c.cause = RestartCause::kNone;
  EXPECT_FALSE(DecideInJobRestart(c));
}

TEST(InJobRestart, RestartsDoNotSpendTheRequeueFailureBudget) {
  auto attempt = [](int64_t s0, int64_t last, const char* action, const char* reason) {
    PastAttempt a;
    a.step0 = s0;
    a.last_step = last;
    a.action = action;
    a.reason = reason;
    a.ended = true;
    return a;
  };
  ExitContext c;
  c.exit_code = 137;
  c.hang = true;
  c.max_failures = 1;
  c.history = {attempt(0, 5, "restart", "crashed"), attempt(5, 9, "restart", "hang"),
               attempt(9, 12, "", "")};
  ExitDecision d = DecideAfterExit(c);
  EXPECT_EQ(d.action, ExitAction::kRequeue) << d.detail;
  EXPECT_EQ(d.reason, AttemptEndReason::kHang);
  c.history.insert(c.history.begin(), attempt(0, 3, "requeue", "hang"));
  EXPECT_EQ(DecideAfterExit(c).reason, AttemptEndReason::kFailureBudget);
}

TEST(StackCapture, LocalRanksDirectlyRemoteOnesThroughTheAllocation) {
  HeartbeatRecord b = Beat(1, HeartbeatPhase::kUpdate, 3, 1);
  b.pid = 4242;
  b.host = "gpu7";
  b.node = "gpu7";
  EXPECT_EQ(StackCommand(b, "55", "gpu7", "gdb"),
            (std::vector<std::string>{"gdb", "-batch", "-nx", "-p", "4242", "-ex",
                                      "thread apply all bt"}));
  EXPECT_EQ(StackCommand(b, "55", "gpu7", "eu-stack"),
            (std::vector<std::string>{"eu-stack", "-p", "4242"}));
  EXPECT_EQ(StackCommand(b, "55", "login1", "gdb"),
            (std::vector<std::string>{"srun", "--jobid", "55", "--overlap", "-N1", "-n1", "--quiet",
                                      "--nodelist=gpu7", "gdb", "-batch", "-nx", "-p", "4242",
                                      "-ex", "thread apply all bt"}));
  EXPECT_EQ(ListPidsCommand(b, "55", "gpu7"),
            (std::vector<std::string>{"scontrol", "listpids", "55", "gpu7"}));
  EXPECT_EQ(ListPidsCommand(b, "55", "login1").back(), "gpu7");
  EXPECT_EQ(ListPidsCommand(b, "55", "login1").front(), "srun");
  EXPECT_EQ(EndStepCommand("55", "3"),
            (std::vector<std::string>{"scancel", "--signal=KILL", "--quiet", "55.3"}));
}

// A run folder whose "trainer" is a shell script: it exits with the next code of `codes` on
// each start (the last one repeats), and writes a checkpoint of step 5 * start when `advance`.
LaunchEnvironment ShellRun(const TempDir& tmp, const std::string& codes, int64_t in_job_restarts) {
  Append(tmp / "data/.keep", "");
  Append(tmp / "run/run.yaml", "run: {name: t, steps: 10, dir: " + tmp.path() +
                                   "/run}\ndata: {path: " + tmp.path() +
                                   "/data}\nslurm: {max_failures: 5, in_job_restarts: " +
                                   std::to_string(in_job_restarts) + "}\n");
  const std::string trainer = tmp / "trainer.sh";
  Append(trainer, "#!/bin/sh\nn=$(cat " + tmp.path() +
                      "/n 2>/dev/null || echo 0)\necho $((n + 1)) > " + tmp.path() + "/n\nset -- " +
                      codes + "\nshift $((n < $# ? n : $# - 1))\nexit $1\n");
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  LaunchEnvironment env;
  env.job_id = "42";
  env.restart_count = 0;
  env.nodes = "n1";
  env.in_allocation = true;
  env.use_srun = false;
  env.trainer_bin = trainer;
  return env;
}

TEST(InJobRestart, ACrashRestartsTheTrainerInTheSameJob) {
  TempDir tmp;
  const LaunchEnvironment env = ShellRun(tmp, "137 70 0", 2);
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 0) << log.str();
  EXPECT_TRUE(slurm.requeued.empty());
  const std::vector<PastAttempt> h = ReadAttemptHistory(tmp / "run");
  ASSERT_EQ(h.size(), 3u) << log.str();
  EXPECT_EQ(h[0].action, "restart");
  EXPECT_EQ(h[0].reason, "crashed");
  EXPECT_EQ(h[1].action, "restart");
  EXPECT_EQ(h[2].action, "done");
  EXPECT_EQ(std::filesystem::path(h[1].events_path).filename(), "42.0.1.jsonl");
  std::ifstream f(h[1].events_path);
  std::string first;
  std::getline(f, first);
  const auto start = AttemptStartEvent::FromJson(nlohmann::json::parse(first));
  EXPECT_EQ(start.in_job_seq, 1);
  EXPECT_EQ(start.restart_cause, "crash");

  // The store keeps one attempt per restart, under the same job id and restart count.
  auto store = test::OpenStore(tmp / "home/baton.db");
  ASSERT_TRUE(store);
  const RunRecord run = test::MakeRun(*store, tmp / "run");
  ASSERT_TRUE(IngestRun(*store, run, IngestOptions{}).ok());
  const std::vector<AttemptRecord> a = store->ListAttempts(run.id).value();
  ASSERT_EQ(a.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a[i].job_id, "42");
    EXPECT_EQ(a[i].restart_count, 0);
    EXPECT_EQ(a[i].in_job_seq, i);
  }
  EXPECT_FALSE(a[0].restart_cause);
  EXPECT_EQ(a[1].restart_cause.value_or(""), "crash");
  EXPECT_EQ(a[0].end_reason, "crashed");
  EXPECT_EQ(a[0].action, "restart");
  EXPECT_EQ(store->GetRun(run.id).value().status, RunStatus::kCompleted);
}

TEST(InJobRestart, RestartsWithoutANewerCheckpointEndAsNoProgressNotARequeue) {
  TempDir tmp;
  const LaunchEnvironment env = ShellRun(tmp, "137", 2);
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 137) << log.str();
  EXPECT_TRUE(slurm.requeued.empty()) << log.str();
  const std::vector<PastAttempt> h = ReadAttemptHistory(tmp / "run");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[2].action, "fail");
  EXPECT_EQ(h[2].reason, "no_progress");
}

TEST(InJobRestart, ConfigDataAndDivergenceStayFinalAndASpentBudgetRequeues) {
  for (int code : {65, 78, 79}) {
    TempDir tmp;
    const LaunchEnvironment env = ShellRun(tmp, std::to_string(code), 2);
    FakeSlurmClient slurm;
    slurm.SetState("42", "RUNNING");
    std::ostringstream log;
    EXPECT_EQ(Launch(tmp / "run", env, slurm, log), code);
    EXPECT_EQ(ReadAttemptHistory(tmp / "run").size(), 1u) << code;
  }
  TempDir tmp;
  const LaunchEnvironment env = ShellRun(tmp, "137", 0);  // no in-job restarts
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 75) << log.str();
  EXPECT_EQ(slurm.requeued, std::vector<std::string>{"42"});
}

}  // namespace
}  // namespace baton
