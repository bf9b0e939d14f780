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
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Status::Io(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Status::Io(std::string("pipe: ") + std::strerror(errno));
  }
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return Status::Io(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]})
      ::close(fd);
    return Status::Io(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::setpgid(0, 0);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    // Restore default signal dispositions the caller may have changed (the launcher does).
    for (int sig : {SIGPIPE, SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGCHLD}) ::signal(sig, SIG_DFL);
    ::execv(exe.c_str(), cargv.data());
    const int e = errno;
    (void)!::write(exec_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);

  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    const int n = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (pollfd& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t r = ::read(p.fd, buf, sizeof buf);
      if (r > 0) {
        (p.fd == out_pipe[0] ? result.out : result.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(p.fd);
        p.fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& p : fds) {
    if (p.fd >= 0) ::close(p.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int exec_errno = 0;
  const bool exec_failed =
      ::read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(exec_pipe[0]);
  if (exec_failed) {
    return Status::Unavailable("cannot run '" + exe + "': " + std::strerror(exec_errno));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  return result;
}

}  // namespace baton
