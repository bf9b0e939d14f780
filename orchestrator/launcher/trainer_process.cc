#include "orchestrator/launcher/trainer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>

#include "orchestrator/slurm/process_runner.h"
#include "schema/stop_signals.h"

namespace baton {

namespace {

int g_signal_pipe_write = -1;  // the self-pipe; only touched by the handler and RunTrainerProcess

void OnSignal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  if (g_signal_pipe_write >= 0) (void)!::write(g_signal_pipe_write, &b, 1);
  errno = saved;
}

// How often the loop checks for the child's exit when no signal arrives, in milliseconds.
constexpr int kPollMs = 200;

}  // namespace

Result<TrainerExit> RunTrainerProcess(const std::vector<std::string>& argv, void (*on_signal)(int),
                                      const std::function<bool(int child_pid)>& on_tick) {
  if (argv.empty()) return Status::Internal("RunTrainerProcess: empty argv");
  const std::string exe = FindExecutable(argv[0]);
  if (exe.empty()) return Status::Unavailable("'" + argv[0] + "' not found or not executable");

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Io(std::string("pipe: ") + std::strerror(errno));
  }
  g_signal_pipe_write = fds[1];
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  constexpr size_t kForwarded = std::size(kStopSignals);
  struct sigaction old[kForwarded];
  for (size_t i = 0; i < kForwarded; ++i) ::sigaction(kStopSignals[i].number, &sa, &old[i]);
  auto restore = [&]() {
    for (size_t i = 0; i < kForwarded; ++i) ::sigaction(kStopSignals[i].number, &old[i], nullptr);
    g_signal_pipe_write = -1;
    ::close(fds[0]);
    ::close(fds[1]);
  };

  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    restore();
    return Status::Io(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    for (const StopSignalEntry& e : kStopSignals) ::signal(e.number, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(exe.c_str(), cargv.data());
    ::_exit(127);
  }

  TrainerExit result;
  std::chrono::steady_clock::time_point end_asked;
  bool killed = false;
  while (true) {
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, kPollMs);
    if (n > 0) {
      unsigned char sigs[64];
      ssize_t r;
      while ((r = ::read(fds[0], sigs, sizeof sigs)) > 0) {
        for (ssize_t i = 0; i < r; ++i) {
          ::kill(pid, sigs[i]);
          result.forwarded.push_back(sigs[i]);
          if (on_signal) on_signal(sigs[i]);
        }
      }
    }
    int status = 0;
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) {
        result.term_signal = WTERMSIG(status);
        result.exit_code = 128 + result.term_signal;
      }
      break;
    }
    if (w < 0 && errno != EINTR) {
      restore();
      return Status::Internal(std::string("waitpid: ") + std::strerror(errno));
    }
    if (!result.ended_by_watch && on_tick && on_tick(int(pid))) {
      result.ended_by_watch = true;
      end_asked = std::chrono::steady_clock::now();
    }
    if (result.ended_by_watch && !killed &&
        std::chrono::steady_clock::now() - end_asked > std::chrono::duration<double>(kEndGraceS)) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
  }
  // Signals that arrived in the last instant are still reported (the child is gone).
  unsigned char sigs[64];
  ssize_t r;
  while ((r = ::read(fds[0], sigs, sizeof sigs)) > 0) {
    for (ssize_t i = 0; i < r; ++i) result.forwarded.push_back(sigs[i]);
  }
  restore();
  return result;
}

}  // namespace baton
