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

int g_signal_pipe_write = -1;  // the self-pipe; only touched by the handler and SignalPipe

void OnSignal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  if (g_signal_pipe_write >= 0) (void)!::write(g_signal_pipe_write, &b, 1);
  errno = saved;
}

// How often the loop checks for the child's exit when no signal arrives, in milliseconds.
constexpr int kPollMs = 200;

// The stop signals (schema/stop_signals.h) caught while one of these is installed: each handler
// writes its signal's number to the self-pipe the wait loop reads. The old handlers come back, and
// the pipe is closed, when it goes.
class SignalPipe {
 public:
  SignalPipe() = default;
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;
  ~SignalPipe() {
    if (!installed_) return;
    for (size_t i = 0; i < kForwarded; ++i) ::sigaction(kStopSignals[i].number, &old_[i], nullptr);
    g_signal_pipe_write = -1;
    ::close(fds_[0]);
    ::close(fds_[1]);
  }

  [[nodiscard]] Status Install() {
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
      return Status::Io(std::string("pipe: ") + std::strerror(errno));
    }
    installed_ = true;
    g_signal_pipe_write = fds_[1];
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < kForwarded; ++i) ::sigaction(kStopSignals[i].number, &sa, &old_[i]);
    return Status::Ok();
  }

  // The signals caught since the last call, in order, waiting up to `timeout_ms` for one.
  std::vector<int> Wait(int timeout_ms) {
    pollfd p{fds_[0], POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) > 0 ? Take() : std::vector<int>{};
  }

  // The signals caught since the last call, in order, without waiting.
  std::vector<int> Take() {
    std::vector<int> out;
    unsigned char sigs[64];
    ssize_t r;
    while ((r = ::read(fds_[0], sigs, sizeof sigs)) > 0) out.insert(out.end(), sigs, sigs + r);
    return out;
  }

 private:
  static constexpr size_t kForwarded = std::size(kStopSignals);
  bool installed_ = false;
  int fds_[2] = {-1, -1};
  struct sigaction old_[kForwarded];
};

// Forks and execs `exe` with `argv`. The child gets the stop signals' default dispositions and an
// empty signal mask: the signals forwarded to it must reach it.
Result<pid_t> Spawn(const std::string& exe, const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return Status::Io(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    for (const StopSignalEntry& e : kStopSignals) ::signal(e.number, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(exe.c_str(), cargv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for the child, forwarding every stop signal caught to it. Once `on_tick` asks for the
// end, the child has kEndGraceS to exit before it is killed.
Result<TrainerExit> WaitForChild(pid_t pid, SignalPipe& signals, void (*on_signal)(int),
                                 const std::function<bool(int child_pid)>& on_tick) {
  TrainerExit result;
  std::chrono::steady_clock::time_point end_asked;
  bool killed = false;
  while (true) {
    for (int sig : signals.Wait(kPollMs)) {
      ::kill(pid, sig);
      result.forwarded.push_back(sig);
      if (on_signal) on_signal(sig);
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
  for (int sig : signals.Take()) result.forwarded.push_back(sig);
  return result;
}

}  // namespace

Result<TrainerExit> RunTrainerProcess(const std::vector<std::string>& argv, void (*on_signal)(int),
                                      const std::function<bool(int child_pid)>& on_tick) {
  if (argv.empty()) return Status::Internal("RunTrainerProcess: empty argv");
  const std::string exe = FindExecutable(argv[0]);
  if (exe.empty()) return Status::Unavailable("'" + argv[0] + "' not found or not executable");
  SignalPipe signals;
  if (Status st = signals.Install(); !st.ok()) return st;
  Result<pid_t> pid = Spawn(exe, argv);
  if (!pid.ok()) return pid.status();
  return WaitForChild(*pid, signals, on_signal, on_tick);
}

}  // namespace baton
