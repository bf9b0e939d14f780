// The write probe in a shared folder: what others planted there (a symlink, a FIFO at the name
// the probe once used) is never opened, truncated or removed; a probe killed by SIGKILL in the
// middle of its writes leaves no file; a folder without room for it is a named I/O error.
#include "orchestrator/submit/write_probe.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "schema/atomic_file.h"
#include "test_util.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using test::Append;
using test::TempDir;

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// Bytes PID has written with write(2) so far (/proc/PID/io's wchar); -1 once it is gone.
int64_t WrittenBy(pid_t pid) {
  std::ifstream io("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value) {
    if (key == "wchar:") return value;
  }
  return -1;
}

// Runs `fn` in a child process; waits up to `limit_s` for it, then SIGKILLs it. The wait status.
template <class F>
int InChild(F fn, double limit_s) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::_exit(fn());
  }
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit_s) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status;
}

TEST(WriteProbe, APlantedSymlinkIsNeitherFollowedNorRemoved) {
  TempDir tmp;
  const std::string folder = tmp / "shared";
  fs::create_directories(folder);
  Append(tmp / "victim", "keep me");
  // The name the probe used to take (its pid), and a few around it.
  const std::string planted = std::string(kWriteProbePrefix) + std::to_string(::getpid());
  fs::create_symlink(tmp / "victim", fs::path(folder) / planted);
  Result<double> r = ProbeWriteRate(folder, 8 << 20);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(*r, 0.0);
  EXPECT_EQ(ReadFile(tmp / "victim").value(), "keep me");
  EXPECT_EQ(Entries(folder), std::set<std::string>{planted});  // nothing of the probe's stays
}

TEST(WriteProbe, APlantedFifoDoesNotHangIt) {
  TempDir tmp;
  const std::string folder = tmp.path();
  const int status = InChild(
      [&] {
        const std::string fifo = folder + "/" + kWriteProbePrefix + std::to_string(::getpid());
        if (::mkfifo(fifo.c_str(), 0600) != 0) return 3;
        return ProbeWriteRate(folder, 4 << 20).ok() ? 0 : 4;
      },
      /*limit_s=*/30);
  ASSERT_TRUE(WIFEXITED(status)) << "the probe hung on a FIFO at its old name (killed)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(WriteProbe, KilledInTheMiddleItLeavesNoFile) {
  TempDir tmp;
  const std::string folder = tmp.path();
  const pid_t pid = ::fork();
  if (pid == 0) {
    (void)ProbeWriteRate(folder, int64_t(2) << 30);
    ::_exit(0);
  }
  // SIGKILL once 16 MiB of the probe are written: inside its write loop.
  for (int i = 0; i < 3000 && WrittenBy(pid) >= 0 && WrittenBy(pid) < (16 << 20); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the probe ended before the kill: no test";
  EXPECT_TRUE(Entries(folder).empty()) << *Entries(folder).begin();
}

TEST(WriteProbe, AFolderWithoutRoomForItIsANamedIoError) {
  TempDir tmp;
  const std::string folder = tmp.path();
  // An exbibyte, asked in a child whose files may not pass 64 MiB: a probe that wrote before it
  // looked at the room fails there with EFBIG instead of filling the disk.
  const int status = InChild(
      [&] {
        const rlimit cap{64 << 20, 64 << 20};
        ::signal(SIGXFSZ, SIG_IGN);
        if (::setrlimit(RLIMIT_FSIZE, &cap) != 0) return 3;
        Result<double> r = ProbeWriteRate(folder, int64_t(1) << 60);
        if (r.ok() || r.status().code() != Code::kIo) return 4;
        const std::string& m = r.status().message();
        const bool named = m.find(folder + ": no room for the checkpoint write probe") == 0 &&
                           m.find("checkpoint.write_gbps") != std::string::npos;
        if (!named) std::fprintf(stderr, "%s\n", m.c_str());
        return named ? 0 : 5;
      },
      /*limit_s=*/60);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(Entries(folder).empty());
}

}  // namespace
}  // namespace baton
