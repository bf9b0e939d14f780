// What the launcher believes of a heartbeat file (docs/bad_input.md, "Integrity round 3: hang
// watch and heartbeats"): records out of range are refused, ages are the launcher's own, a FIFO,
// a symbolic link or a replaced file is never judged, and a PID is acted on only when it is
// proved to be the launcher's own trainer.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "orchestrator/launcher/attempt_history.h"
#include "orchestrator/launcher/hang_watch.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/launcher/stack_capture.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "schema/heartbeat_record.h"
#include "schema/run_folder.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::TempDir;

HeartbeatRecord Record(int64_t rank, HeartbeatPhase phase, int64_t step, double wall) {
  HeartbeatRecord b;
  b.rank = rank;
  b.pid = 1000 + rank;
  b.host = "h1";
  b.node = "n1";
  b.phase = phase;
  b.step = step;
  b.wall = wall;
  b.step_s = 0.5;
  return b;
}

// `text` as a record line of the right size (no validation).
std::string Line(const std::string& text) {
  std::string out = text;
  out.resize(kHeartbeatRecordBytes - 1, ' ');
  return out + "\n";
}

const std::string kGood =
    "baton-heartbeat 1 rank=1 pid=4242 host=h node=n phase=save step=3 micro=0 wall=1764600000.5 "
    "budget_s=60.000 step_s=0.250000";

TEST(HeartbeatRecord, OutOfRangeAndMalformedFieldsAreRefused) {
  ASSERT_TRUE(ParseHeartbeat(Line(kGood + " end")));
  auto with = [](const std::string& from, const std::string& to) {
    std::string t = kGood;
    t.replace(t.find(from), from.size(), to);
    return Line(t + " end");
  };
  for (const char* wall : {"wall=nan", "wall=inf", "wall=-inf", "wall=0", "wall=-5", "wall=1e999"})
    EXPECT_FALSE(ParseHeartbeat(with("wall=1764600000.5", wall))) << wall;
  for (const char* pid : {"pid=0", "pid=-1", "pid=2147483648", "pid=4294967297", "pid=1.5",
                          "pid=0x10", "pid=+7", "pid=", "pid=1e3"})
    EXPECT_FALSE(ParseHeartbeat(with("pid=4242", pid))) << pid;
  EXPECT_TRUE(ParseHeartbeat(with("pid=4242", "pid=2147483647")));
  for (const char* rank : {"rank=-1", "rank=1048576", "rank=nan"})
    EXPECT_FALSE(ParseHeartbeat(with("rank=1", rank))) << rank;
  for (const char* step : {"step=-1", "step=1e300", "step=9007199254740993", "step=3.5"})
    EXPECT_FALSE(ParseHeartbeat(with("step=3", step))) << step;
  for (const char* b : {"budget_s=nan", "budget_s=inf", "budget_s=-1", "budget_s=1e8"})
    EXPECT_FALSE(ParseHeartbeat(with("budget_s=60.000", b))) << b;
  EXPECT_FALSE(ParseHeartbeat(with("step_s=0.250000", "step_s=nan")));
  EXPECT_FALSE(ParseHeartbeat(with("phase=save", "phase=save phase=init")));  // repeated
  EXPECT_FALSE(ParseHeartbeat(with("micro=0 ", "")));                         // missing
  EXPECT_FALSE(ParseHeartbeat(Line(kGood + " end junk")));
  EXPECT_FALSE(ParseHeartbeat(with("step=3", "step=3 done=-4")));
  // `done` is optional (an earlier trainer's record) and read when there.
  EXPECT_EQ(ParseHeartbeat(with("step=3", "step=3 done=123456789"))->done, 123456789);
}

TEST(HeartbeatRecord, LongNamesGiveWayAndTheRecordStaysWhole) {
  HeartbeatRecord b = Record(kHeartbeatMaxRank - 1, HeartbeatPhase::kMicroStep, kHeartbeatMaxCount,
                             1764600000.123456);
  b.pid = kHeartbeatMaxPid;
  b.micro = kHeartbeatMaxCount;
  b.done = kHeartbeatMaxCount;
  b.budget_s = kHeartbeatMaxSeconds;
  b.step_s = kHeartbeatMaxSeconds;
  b.host = std::string(80, 'h');
  b.node = std::string(80, 'n');
  const std::string text = FormatHeartbeat(b);
  ASSERT_EQ(text.size(), kHeartbeatRecordBytes);
  const std::optional<HeartbeatRecord> r = ParseHeartbeat(text);
  ASSERT_TRUE(r) << text;
  EXPECT_EQ(r->pid, kHeartbeatMaxPid);
  EXPECT_EQ(r->done, kHeartbeatMaxCount);
  EXPECT_FALSE(r->host.empty());
  EXPECT_EQ(ParseHeartbeat(FormatHeartbeat(Record(0, HeartbeatPhase::kInit, 0, 5)))->host, "h1");
}

HangLimits Limits() {
  HangLimits l;
  l.min_s = 10;
  l.factor = 5;
  l.first_step_s = 100;
  return l;
}

void Write(const std::string& path, const HeartbeatRecord& b) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << FormatHeartbeat(b);
}

TEST(HangWatch, AgeIsTheLaunchersOwnClockNotTheNodesWallTime) {
  TempDir tmp;
  const std::string f = RunFolder{tmp.path()}.HeartbeatFile(0);
  std::ostringstream log;
  HangWatch w(tmp.path(), 1, 0, /*started_at=*/0, Limits());
  // A node whose clock is hours behind (wall 5 s after the epoch), beating every second.
  for (int t = 1; t <= 30; ++t) {
    Write(f, Record(0, HeartbeatPhase::kMicroStep, 2 + t, 5 + t));
    EXPECT_FALSE(w.Poll(t, log)) << "t=" << t << ": " << log.str();
  }
  // It stops: stale once unchanged for more than hang_min_s 10, by this host's clock.
  EXPECT_FALSE(w.Poll(39, log));
  std::optional<HangReport> r = w.Poll(41, log);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->stale[0].age_s, 11);
  EXPECT_DOUBLE_EQ(r->last_heartbeat_at, 30);
}

TEST(HangWatch, ALoadOrSaveThatMakesProgressIsNeverStale) {
  TempDir tmp;
  const std::string f = RunFolder{tmp.path()}.HeartbeatFile(0);
  std::ostringstream log;
  HangWatch w(tmp.path(), 1, 0, 0, Limits());
  HeartbeatRecord load = Record(0, HeartbeatPhase::kLoad, 0, 100);
  load.budget_s = 60;                   // 3 x bytes / rate: too little for this slow filesystem
  for (int t = 0; t <= 600; t += 50) {  // 10 minutes, a progress beat every 50 s
    load.done = int64_t(t) << 20;
    load.wall = 100 + t;
    Write(f, load);
    EXPECT_FALSE(w.Poll(t, log)) << "t=" << t;
  }
  // The first load's least budget is train.first_step_timeout_s (100), not the 60 s it wrote.
  EXPECT_FALSE(w.Poll(699, log));
  std::optional<HangReport> r = w.Poll(701, log);
  ASSERT_TRUE(r);
  EXPECT_NE(r->stale[0].why.find("a load's least budget"), std::string::npos) << r->stale[0].why;
}

// Poll must come back within 5 s; if it blocks (a FIFO opened for reading waits for a writer),
// a writer is opened so the test can end, and it fails.
void ExpectPollReturns(HangWatch& w, double now, std::ostream& log, const std::string& fifo) {
  auto done = std::async(std::launch::async, [&] { return w.Poll(now, log).has_value(); });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    done.wait();
    if (fd >= 0) ::close(fd);
    FAIL() << "Poll blocked on " << fifo;
  }
  EXPECT_FALSE(done.get());
}

TEST(HangWatch, AFifoOrASymlinkIsNeverOpenedNorJudged) {
  TempDir tmp;
  const RunFolder folder{tmp.path()};
  std::filesystem::create_directories(folder.HeartbeatDir());
  ASSERT_EQ(::mkfifo(folder.HeartbeatFile(0).c_str(), 0644), 0);
  // Rank 1: a symbolic link to a record that would be stale.
  Write(tmp / "elsewhere", Record(1, HeartbeatPhase::kMicroStep, 9, 1));
  std::filesystem::create_symlink(tmp / "elsewhere", folder.HeartbeatFile(1));
  std::ostringstream log;
  HangWatch w(tmp.path(), 2, 0, 0, Limits());
  for (double t : {1.0, 500.0, 1000.0}) ExpectPollReturns(w, t, log, folder.HeartbeatFile(0));
  EXPECT_NE(log.str().find("no heartbeat from rank(s) 0, 1"), std::string::npos) << log.str();
  EXPECT_FALSE(w.Current(0));
  EXPECT_FALSE(w.Current(1));
  const HeartbeatFileRead fifo = ReadHeartbeatFile(folder.HeartbeatFile(0));
  EXPECT_EQ(fifo.kind, HeartbeatFileRead::kNotRegular);
  EXPECT_EQ(fifo.what, "a FIFO");
  EXPECT_EQ(ReadHeartbeatFile(folder.HeartbeatFile(1)).what, "a symbolic link");
}

TEST(HangWatch, AReplacedFileIsNotTheRanksRecordUntilItChanges) {
  TempDir tmp;
  const std::string f = RunFolder{tmp.path()}.HeartbeatFile(0);
  std::ostringstream log;
  HangWatch w(tmp.path(), 1, 0, 0, Limits());
  Write(f, Record(0, HeartbeatPhase::kMicroStep, 4, 10));
  EXPECT_FALSE(w.Poll(1, log));
  // A restore renames an old copy over the file; the trainer writes on into the unlinked one.
  Write(tmp / "backup", Record(0, HeartbeatPhase::kMicroStep, 2, 5));
  std::filesystem::rename(tmp / "backup", f);
  for (double t : {2.0, 50.0, 500.0}) EXPECT_FALSE(w.Poll(t, log)) << t << ": " << log.str();
  EXPECT_NE(log.str().find("the file was replaced"), std::string::npos) << log.str();
  EXPECT_FALSE(w.Current(0));
  // A live writer behind the new file: judged again, from its change.
  Write(f, Record(0, HeartbeatPhase::kMicroStep, 5, 600));
  EXPECT_FALSE(w.Poll(600, log));
  ASSERT_TRUE(w.Current(0));
  EXPECT_EQ(w.Current(0)->step, 5);
  EXPECT_FALSE(w.Poll(609, log));
  EXPECT_TRUE(w.Poll(611, log));
}

TEST(StackCapture, ListPidsNamesTheTaskOfThisJobOnly) {
  const std::string out =
      "PID      JOBID    STEPID   LOCALID GLOBALID\n"
      "15378    2        0        0       0       \n"
      "15381    2        3        0       1       \n"
      "15403    2        0        -       -       \n"
      "15500    2        batch    0       0       \n"
      "15600    7        0        0       1       \n";
  EXPECT_EQ(FindTaskInListPids(out, "2", 0, 15378).value_or(""), "0");
  EXPECT_EQ(FindTaskInListPids(out, "2", 1, 15381).value_or(""), "3");
  EXPECT_FALSE(FindTaskInListPids(out, "2", 1, 15378));  // the PID of another rank
  EXPECT_FALSE(FindTaskInListPids(out, "2", 0, 15403));  // a child, not a task
  EXPECT_FALSE(FindTaskInListPids(out, "2", 0, 15500));  // the batch step
  EXPECT_FALSE(FindTaskInListPids(out, "2", 1, 15600));  // another job's task
  EXPECT_FALSE(FindTaskInListPids("", "2", 0, 15378));
}

// A process named baton-train-victim that is not the launcher's: a copy of sleep.
pid_t StartVictim(const TempDir& tmp) {
  const std::string exe = tmp / "baton-train-victim";
  std::filesystem::copy_file("/bin/sleep", exe);
  std::filesystem::permissions(exe, std::filesystem::perms::owner_all);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(exe.c_str(), exe.c_str(), "60", (char*)nullptr);
    ::_exit(127);
  }
  return pid;
}

bool Alive(pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) == 0; }

TEST(StackCapture, OnlyTheLaunchersOwnChildOrItsDescendantsAreProved) {
  TempDir tmp;
  const pid_t victim = StartVictim(tmp);
  const pid_t trainer = ::fork();  // the launcher's child: the victim's sibling
  if (trainer == 0) {
    ::execl("/bin/sleep", "sleep", "60", (char*)nullptr);
    ::_exit(127);
  }
  StepScope scope{"local-1", false, int(trainer), ThisHost()};
  HeartbeatRecord b = Record(0, HeartbeatPhase::kMicroStep, 3, 1);
  b.host = ThisHost();
  b.pid = victim;
  EXPECT_FALSE(VerifyRank(b, scope).ok());
  b.pid = trainer;
  EXPECT_TRUE(VerifyRank(b, scope).ok());
  scope.child_pid = int(::getpid());
  b.pid = victim;
  EXPECT_TRUE(VerifyRank(b, scope).ok());  // a descendant of the child
  b.host = "another-host";
  EXPECT_FALSE(VerifyRank(b, scope).ok());
  b.host = ThisHost();
  b.pid = 1;
  EXPECT_FALSE(VerifyRank(b, scope).ok());
  EXPECT_TRUE(IsSelfOrDescendant(::getpid(), ::getpid()));
  EXPECT_FALSE(IsSelfOrDescendant(::getppid(), ::getpid()));
  // With srun, a node name that reads as an option is refused before SLURM is asked.
  scope.srun = true;
  b.node = "--help";
  EXPECT_FALSE(VerifyRank(b, scope).ok());
  for (pid_t p : {victim, trainer}) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
}

// A whole launch (no SLURM) whose "trainer" writes a heartbeat naming `pid_expr` and then stops
// beating for `sleep_s` seconds.
LaunchEnvironment StaleTrainer(const TempDir& tmp, const std::string& pid_expr, int sleep_s) {
  Append(tmp / "data/.keep", "");
  Append(tmp / "run/run.yaml", "run: {name: t, steps: 10, dir: " + tmp.path() +
                                   "/run}\ndata: {path: " + tmp.path() +
                                   "/data}\ntrain: {hang_min_s: 1, first_step_timeout_s: 1}\n"
                                   "slurm: {in_job_restarts: 0}\n");
  const std::string trainer = tmp / "trainer.sh";
  Append(trainer, "#!/bin/sh\nrec=\"baton-heartbeat 1 rank=0 pid=" + pid_expr +
                      " host=" + ThisHost() +
                      " node=n1 phase=micro-step step=5 micro=0 wall=1.0 budget_s=0 step_s=0.1 "
                      "end\"\nprintf '%-255s\\n' \"$rec\" > " +
                      tmp.path() + "/run/heartbeat/rank-00000\nexec sleep " +
                      std::to_string(sleep_s) + "\n");
  std::filesystem::create_directories(tmp / "run/heartbeat");
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  LaunchEnvironment env;
  env.job_id = "42";
  env.nodes = "n1";
  env.in_allocation = true;
  env.use_srun = false;
  env.trainer_bin = trainer;
  return env;
}

TEST(HangResponse, AHeartbeatNamingAnotherProcessIsNeverAttachedToNorKilled) {
  TempDir tmp;
  const pid_t victim = StartVictim(tmp);
  const LaunchEnvironment env = StaleTrainer(tmp, std::to_string(victim), 4);
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  std::ostringstream log;
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 0) << log.str();
  EXPECT_TRUE(Alive(victim)) << log.str();
  EXPECT_NE(log.str().find("not acting on rank 0's heartbeat: pid " + std::to_string(victim)),
            std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("stacks of rank"), std::string::npos) << log.str();
  EXPECT_EQ(ReadAttemptHistory(tmp / "run").back().reason, "completed");
  ::kill(victim, SIGKILL);
  ::waitpid(victim, nullptr, 0);
}

TEST(HangResponse, TheLaunchersOwnHungTrainerIsCapturedAndEnded) {
  TempDir tmp;
  const LaunchEnvironment env = StaleTrainer(tmp, "$$", 60);  // the child itself
  FakeSlurmClient slurm;
  slurm.SetState("42", "RUNNING");
  std::ostringstream log;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Launch(tmp / "run", env, slurm, log), 75) << log.str();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(45)) << log.str();
  const std::vector<PastAttempt> h = ReadAttemptHistory(tmp / "run");
  ASSERT_EQ(h.size(), 1u) << log.str();
  EXPECT_EQ(h[0].reason, "hang") << log.str();
  EXPECT_NE(log.str().find("ending the job step: SIGKILL to the trainer"), std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("stacks of rank 0 (pid "), std::string::npos) << log.str();
}

}  // namespace
}  // namespace baton
