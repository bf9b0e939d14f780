#include "orchestrator/slurm/process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace baton {

namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// One end of a pipe, closed when it goes unless closed before (-1: none).
class PipeEnd {
 public:
  PipeEnd() = default;
  PipeEnd(const PipeEnd&) = delete;
  PipeEnd& operator=(const PipeEnd&) = delete;
  ~PipeEnd() { Close(); }

  int fd() const { return fd_; }
  void Reset(int fd) {
    Close();
    fd_ = fd;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A pipe (O_CLOEXEC: the child keeps only the ends it dup2s) whose ends close when it goes.
struct Pipe {
  PipeEnd read;
  PipeEnd write;

  [[nodiscard]] Status Open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return Status::Io(std::string("pipe: ") + std::strerror(errno));
    read.Reset(fds[0]);
    write.Reset(fds[1]);
    return Status::Ok();
  }
};

// Forks the child in its own process group, stdout and stderr into `out` and `err`, stdin from
// /dev/null, and execs `exe`; a failed execv's errno goes into `exec_errors`.
Result<pid_t> StartChild(const std::string& exe, const std::vector<std::string>& argv,
                         const Pipe& out, const Pipe& err, const Pipe& exec_errors) {
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return Status::Io(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::setpgid(0, 0);
    ::dup2(out.write.fd(), STDOUT_FILENO);
    ::dup2(err.write.fd(), STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    // Restore default signal dispositions the caller may have changed (the launcher does).
    for (int sig : {SIGPIPE, SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGCHLD}) ::signal(sig, SIG_DFL);
    ::execv(exe.c_str(), cargv.data());
    const int e = errno;
    (void)!::write(exec_errors.write.fd(), &e, sizeof e);
    ::_exit(127);
  }
  return pid;
}

// Reads the child's stdout and stderr into `result` until both are closed; past `timeout_s` the
// child's process group is killed (result->timed_out). Both ends are closed on return, so a child
// still writing is never left blocked on a full pipe while it is waited for.
void ReadOutputs(pid_t pid, double timeout_s, PipeEnd& out, PipeEnd& err, ProcessResult* result) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  pollfd fds[2] = {{out.fd(), POLLIN, 0}, {err.fd(), POLLIN, 0}};
  PipeEnd* ends[2] = {&out, &err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      result->timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    const int n = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      pollfd& p = fds[i];
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t r = ::read(p.fd, buf, sizeof buf);
      if (r > 0) {
        (i == 0 ? result->out : result->err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        ends[i]->Close();
        p.fd = -1;
        --open_fds;
      }
    }
  }
  out.Close();
  err.Close();
}

// Waits for the child. Code::kUnavailable when its execv failed (its errno in `exec_errors`),
// else its exit status, or 128 + the signal that killed it.
Result<int> Reap(pid_t pid, const std::string& exe, PipeEnd& exec_errors) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int exec_errno = 0;
  const bool exec_failed =
      ::read(exec_errors.fd(), &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  exec_errors.Close();
  if (exec_failed) {
    return Status::Unavailable("cannot run '" + exe + "': " + std::strerror(exec_errno));
  }
  int exit_code = -1;
  if (WIFEXITED(status)) exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) exit_code = 128 + WTERMSIG(status);
  return exit_code;
}

}  // namespace

std::string FindExecutable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return IsExecutableFile(name) ? name : "";
  const char* path = std::getenv("PATH");
  if (path == nullptr || *path == '\0') return "";
  std::string dirs = path;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty()) {
      const std::string candidate = dir + "/" + name;
      if (IsExecutableFile(candidate)) return candidate;
    }
    start = end + 1;
  }
  return "";
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += a.find_first_of(" \t'\"") == std::string::npos ? a : "'" + a + "'";
  }
  return out;
}

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty()) return Status::Internal("RunProcess: empty argv");
  const std::string exe = FindExecutable(argv[0]);
  if (exe.empty()) {
    return Status::Unavailable("'" + argv[0] + "' not found in PATH (" +
                               std::string(std::getenv("PATH") ? std::getenv("PATH") : "unset") +
                               "); is SLURM installed on this machine?");
  }
  Pipe out, err, exec_errors;
  for (Pipe* p : {&out, &err, &exec_errors}) BATON_RETURN_IF_ERROR(p->Open());
  Result<pid_t> pid = StartChild(exe, argv, out, err, exec_errors);
  if (!pid.ok()) return pid.status();
  for (Pipe* p : {&out, &err, &exec_errors}) p->write.Close();

  ProcessResult result;
  ReadOutputs(*pid, timeout_s, out.read, err.read, &result);
  Result<int> exit_code = Reap(*pid, exe, exec_errors.read);
  if (!exit_code.ok()) return exit_code.status();
  result.exit_code = *exit_code;
  return result;
}

}  // namespace baton
