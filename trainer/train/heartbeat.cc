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
#include <mutex>
#include <thread>

#include "schema/clock.h"
#include "schema/file_kind.h"
#include "schema/run_folder.h"
#include "trainer/ckpt/transfer_progress.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

// How often a beat checks that the path still names this rank's own file, in seconds.
constexpr double kIdentityCheckS = 1.0;
// Least seconds between two progress beats inside a load or save.
constexpr double kProgressEveryS = 0.5;

struct State {
  std::mutex mu;  // the background saver's writes report progress from their own thread
  int fd = -1;
  bool failed = false;
  bool recreated_said = false;
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  HeartbeatRecord record;
  double rate_bytes_per_s = 0;  // 0: not measured yet
  double checked_at = 0;        // monotonic seconds of the last identity check
  double written_at = 0;        // monotonic seconds of the last write
};

State& S() {
  static State s;
  return s;
}

double Monotonic() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void WarnOnce(State& s, const std::string& what) {
  if (s.failed) return;
  s.failed = true;
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
  std::fprintf(stderr,
               "baton-train: warning: heartbeat %s: %s; carrying on without heartbeats (the "
               "launcher cannot tell a hang of this rank)\n",
               s.path.c_str(), what.c_str());
}

std::string KindOf(mode_t mode) { return S_ISLNK(mode) ? "a symbolic link" : FileKind(mode); }

// Opens the rank's file: never through a symbolic link, never anything but a regular file (a
// FIFO would block, a device or another file would be overwritten). `fresh`: the path must not
// exist (O_EXCL), after the caller removed a file that replaced ours.
bool OpenOwn(State& s, bool fresh) {
  const int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (fresh ? O_EXCL : 0);
  const int fd = ::open(s.path.c_str(), flags, 0644);
  if (fd < 0) {
    const int err = errno;
    WarnOnce(s, err == ELOOP   ? "it is a symbolic link; not following it"
                : err == ENXIO ? "it is a FIFO, not a regular file"
                               : std::string("cannot open: ") + std::strerror(err));
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    WarnOnce(s, "it is " + KindOf(st.st_mode) + ", not a regular file");
    return false;
  }
  s.fd = fd;
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  return true;
}

// The path no longer names the file this rank writes (a rename over it, a restore, an unlink):
// a regular file there is removed and a new one of ours takes its place; anything else is
// refused as at the start. The heartbeat folder itself is never recreated.
void KeepOwnFile(State& s) {
  const double now = Monotonic();
  if (now - s.checked_at < kIdentityCheckS) return;
  s.checked_at = now;
  struct stat st {};
  const bool there = ::lstat(s.path.c_str(), &st) == 0;
  if (there && st.st_dev == s.dev && st.st_ino == s.ino) return;
  if (there && !S_ISREG(st.st_mode)) {
    WarnOnce(s, "it was replaced by " + KindOf(st.st_mode) + "; not writing through it");
    return;
  }
  if (there && ::unlink(s.path.c_str()) != 0 && errno != ENOENT) {
    WarnOnce(s, std::string("it was replaced and cannot be removed: ") + std::strerror(errno));
    return;
  }
  ::close(s.fd);
  s.fd = -1;
  if (!OpenOwn(s, /*fresh=*/true)) return;
  if (!s.recreated_said) {
    s.recreated_said = true;
    std::fprintf(stderr, "baton-train: heartbeat %s was %s; writing a new one\n", s.path.c_str(),
                 there ? "replaced by another file" : "removed");
  }
}

void Write(State& s) {
  s.record.wall = UnixTimeNow();
  s.written_at = Monotonic();
  const std::string text = FormatHeartbeat(s.record);
  const ssize_t n = ::pwrite(s.fd, text.data(), text.size(), 0);
  if (n != ssize_t(text.size())) {
    WarnOnce(s, n < 0 ? std::string("cannot write: ") + std::strerror(errno) : "short write");
  }
}

// The transfer sink (trainer/ckpt/transfer_progress.h): inside a load or save, bytes moved are a
// beat, at most every kProgressEveryS.
void OnTransferred(uint64_t bytes) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  const HeartbeatPhase p = s.record.phase;
  if (s.fd < 0 || (p != HeartbeatPhase::kLoad && p != HeartbeatPhase::kSave)) return;
  s.record.done += int64_t(bytes);
  if (Monotonic() - s.written_at < kProgressEveryS) return;
  KeepOwnFile(s);
  if (s.fd >= 0) Write(s);
}

}  // namespace

void StartHeartbeat(const std::string& run_dir, int64_t rank, const std::string& node) {
  State& s = S();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
    s.failed = false;
    s.recreated_said = false;
    const RunFolder folder{run_dir};
    s.path = folder.HeartbeatFile(rank);
    std::error_code ec;
    fs::create_directories(folder.HeartbeatDir(), ec);
    if (!OpenOwn(s, /*fresh=*/false)) return;
    s.checked_at = Monotonic();
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    s.record = HeartbeatRecord{};
    s.record.rank = rank;
    s.record.pid = ::getpid();
    s.record.host = host;
    s.record.node = !node.empty() ? node : host;
  }
  SetTransferSink(&OnTransferred);
  Beat(HeartbeatPhase::kInit, 0, 0);
}

void Beat(HeartbeatPhase phase, int64_t step, int64_t micro, double budget_s) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.fd < 0) return;
  KeepOwnFile(s);
  if (s.fd < 0) return;
  s.record.phase = phase;
  s.record.step = step;
  s.record.micro = micro;
  s.record.budget_s = budget_s;
  s.record.done = 0;
  Write(s);
}

void HeartbeatStepDone(double seconds) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().record.step_s = seconds;
}

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

void SleepSeconds(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace baton
