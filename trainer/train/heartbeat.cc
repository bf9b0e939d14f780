#include "trainer/train/heartbeat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "schema/run_folder.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

struct State {
  int fd = -1;
  bool failed = false;
  std::string path;
  HeartbeatRecord record;
  double rate_bytes_per_s = 0;  // 0: not measured yet
};

State& S() {
  static State s;
  return s;
}

void WarnOnce(const std::string& what) {
  State& s = S();
  if (s.failed) return;
  s.failed = true;
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
  std::fprintf(stderr,
               "baton-train: warning: heartbeat %s: %s; carrying on without heartbeats (the "
               "launcher cannot tell a hang of this rank)\n",
               s.path.c_str(), what.c_str());
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double EnvDouble(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  return (end && *end == '\0') ? d : fallback;
}

}  // namespace

void StartHeartbeat(const std::string& run_dir, int64_t rank) {
  State& s = S();
  const RunFolder folder{run_dir};
  s.path = folder.HeartbeatFile(rank);
  std::error_code ec;
  fs::create_directories(folder.HeartbeatDir(), ec);
  s.fd = ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (s.fd < 0) {
    WarnOnce(std::string("cannot open: ") + std::strerror(errno));
    return;
  }
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const char* node = std::getenv("SLURMD_NODENAME");
  s.record.rank = rank;
  s.record.pid = ::getpid();
  s.record.host = host;
  s.record.node = (node && *node) ? node : host;
  Beat(HeartbeatPhase::kInit, 0, 0);
}

void Beat(HeartbeatPhase phase, int64_t step, int64_t micro, double budget_s) {
  State& s = S();
  if (s.fd < 0) return;
  s.record.phase = phase;
  s.record.step = step;
  s.record.micro = micro;
  s.record.budget_s = budget_s;
  s.record.wall = WallNow();
  const std::string text = FormatHeartbeat(s.record);
  const ssize_t n = ::pwrite(s.fd, text.data(), text.size(), 0);
  if (n != ssize_t(text.size())) {
    WarnOnce(n < 0 ? std::string("cannot write: ") + std::strerror(errno) : "short write");
  }
}

void HeartbeatStepDone(double seconds) { S().record.step_s = seconds; }

double TransferBudgetS(int64_t bytes) {
  constexpr double kDefaultRate = 50e6;  // bytes/s before this rank measured one
  const double rate = S().rate_bytes_per_s > 0 ? S().rate_bytes_per_s : kDefaultRate;
  return std::max(60.0, 3.0 * double(bytes) / rate);
}

void HeartbeatTransferRate(int64_t bytes, double seconds) {
  if (bytes > 0 && seconds > 0) S().rate_bytes_per_s = double(bytes) / seconds;
}

int64_t FolderBytes(const std::string& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) total += int64_t(it->file_size(e2));
  }
  return total;
}

const HeartbeatTestHooks& TestHooksFromEnv() {
  static const HeartbeatTestHooks hooks = [] {
    HeartbeatTestHooks h;
    h.save_sleep_s = EnvDouble("BATON_TEST_SAVE_SLEEP_S", 0);
    h.first_step_sleep_s = EnvDouble("BATON_TEST_FIRST_STEP_SLEEP_S", 0);
    h.crash_at_step = int64_t(EnvDouble("BATON_TEST_CRASH_AT_STEP", -1));
    h.crash_rank = int64_t(EnvDouble("BATON_TEST_CRASH_RANK", 0));
    return h;
  }();
  return hooks;
}

void SleepSeconds(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace baton
