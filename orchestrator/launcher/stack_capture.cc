#include "orchestrator/launcher/stack_capture.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "orchestrator/slurm/process_runner.h"

namespace baton {

namespace {

bool Remote(const HeartbeatRecord& beat, const std::string& this_host) {
  return !beat.host.empty() && beat.host != this_host;
}

std::vector<std::string> OnNode(const HeartbeatRecord& beat, const std::string& job_id,
                                std::vector<std::string> argv) {
  std::vector<std::string> out = {"srun", "--jobid", job_id, "--overlap", "-N1",
                                  "-n1",  "--quiet", "-w",   beat.node};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace

std::string ThisHost() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host;
}

std::vector<std::string> StackCommand(const HeartbeatRecord& beat, const std::string& job_id,
                                      const std::string& this_host, const std::string& debugger) {
  const std::string pid = std::to_string(beat.pid);
  std::vector<std::string> argv =
      debugger == "eu-stack" ? std::vector<std::string>{"eu-stack", "-p", pid}
                             : std::vector<std::string>{
                                   "gdb", "-batch", "-nx", "-p", pid, "-ex", "thread apply all bt"};
  return Remote(beat, this_host) ? OnNode(beat, job_id, argv) : argv;
}

std::vector<std::string> KillCommand(const HeartbeatRecord& beat, const std::string& job_id) {
  return OnNode(beat, job_id, {"kill", "-KILL", std::to_string(beat.pid)});
}

std::string CaptureStacks(const HeartbeatRecord& beat, const std::string& job_id) {
  const std::string host = ThisHost();
  // Remotely the debugger is looked up there; gdb is the one scripts/setup.sh installs.
  std::string debugger = "gdb";
  if (!Remote(beat, host) && FindExecutable("gdb").empty()) {
    if (FindExecutable("eu-stack").empty()) {
      return "(no stacks: neither gdb nor eu-stack is installed; scripts/setup.sh installs gdb)";
    }
    debugger = "eu-stack";
  }
  const std::vector<std::string> argv = StackCommand(beat, job_id, host, debugger);
  Result<ProcessResult> r = RunProcess(argv, kStackCaptureTimeoutS);
  if (!r.ok()) return "(no stacks: " + r.status().ToString() + ")";
  std::string text = r->out;
  if (r->timed_out) {
    text += "\n(" + CommandLine(argv) + " timed out after 30 s)";
  } else if (r->exit_code != 0 || text.empty()) {
    text += "\n(" + CommandLine(argv) + " exited " + std::to_string(r->exit_code) + ": " +
            r->err.substr(0, 2000) + ")";
  }
  return text;
}

bool KillRank(const HeartbeatRecord& beat, const std::string& job_id) {
  if (!Remote(beat, ThisHost())) {
    // Only a trainer: a PID from an old record may have been reused by now.
    std::error_code ec;
    const std::string exe =
        std::filesystem::read_symlink("/proc/" + std::to_string(beat.pid) + "/exe", ec)
            .filename()
            .string();
    if (ec) return true;  // gone
    if (exe.rfind("baton-train", 0) != 0) return false;
    return ::kill(pid_t(beat.pid), SIGKILL) == 0 || errno == ESRCH;
  }
  Result<ProcessResult> r = RunProcess(KillCommand(beat, job_id), kStackCaptureTimeoutS);
  return r.ok() && r->exit_code == 0;
}

}  // namespace baton
