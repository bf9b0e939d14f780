#include "orchestrator/launcher/stack_capture.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "orchestrator/slurm/process_runner.h"
#include "orchestrator/slurm/srun_command.h"

namespace baton {

namespace {

bool Remote(const HeartbeatRecord& beat, const std::string& this_host) {
  return !beat.host.empty() && beat.host != this_host;
}

// The parent PID in /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold spaces and ')'),
// or -1.
int64_t ParentOf(int64_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 1));
  std::string state;
  int64_t ppid = -1;
  rest >> state >> ppid;
  return rest ? ppid : -1;
}

Result<VerifiedRank> VerifyByListPids(const HeartbeatRecord& beat, const StepScope& scope) {
  const std::vector<std::string> argv = ListPidsCommand(beat, scope.job_id, scope.this_host);
  Result<ProcessResult> r = RunProcess(argv, kStackCaptureTimeoutS);
  if (!r.ok()) return r.status();
  if (r->timed_out || r->exit_code != 0) {
    return Status::Unavailable(CommandLine(argv) + (r->timed_out ? " timed out" : " failed") +
                               ": " + r->err.substr(0, 300));
  }
  std::optional<std::string> step = FindTaskInListPids(r->out, scope.job_id, beat.rank, beat.pid);
  if (!step) {
    return Status::NotFound("pid " + std::to_string(beat.pid) + " is not task " +
                            std::to_string(beat.rank) + " of job " + scope.job_id + " on node " +
                            beat.node + " (scontrol listpids)");
  }
  return VerifiedRank{beat, *step};
}

}  // namespace

std::string ThisHost() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host;
}

std::optional<std::string> FindTaskInListPids(const std::string& listpids,
                                              const std::string& job_id, int64_t rank,
                                              int64_t pid) {
  std::istringstream lines(listpids);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream cols(line);
    std::string p, job, step, local, global;
    if (!(cols >> p >> job >> step >> local >> global)) continue;
    const bool numbered =
        !step.empty() && step.find_first_not_of("0123456789") == std::string::npos;
    if (p == std::to_string(pid) && job == job_id && numbered && global == std::to_string(rank)) {
      return step;
    }
  }
  return std::nullopt;
}

bool IsSelfOrDescendant(int64_t pid, int64_t ancestor) {
  if (pid <= 1 || ancestor <= 1) return false;
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    if (pid == ancestor) return true;
    pid = ParentOf(pid);
  }
  return false;
}

std::vector<std::string> ListPidsCommand(const HeartbeatRecord& beat, const std::string& job_id,
                                         const std::string& this_host) {
  std::vector<std::string> argv = {"scontrol", "listpids", job_id, beat.node};
  return Remote(beat, this_host) ? SrunOnNodeOfJob(job_id, beat.node, argv) : argv;
}

std::vector<std::string> StackCommand(const HeartbeatRecord& beat, const std::string& job_id,
                                      const std::string& this_host, const std::string& debugger) {
  const std::string pid = std::to_string(beat.pid);
  std::vector<std::string> argv =
      debugger == "eu-stack" ? std::vector<std::string>{"eu-stack", "-p", pid}
                             : std::vector<std::string>{
                                   "gdb", "-batch", "-nx", "-p", pid, "-ex", "thread apply all bt"};
  return Remote(beat, this_host) ? SrunOnNodeOfJob(job_id, beat.node, argv) : argv;
}

std::vector<std::string> EndStepCommand(const std::string& job_id, const std::string& step) {
  return {"scancel", "--signal=KILL", "--quiet", job_id + "." + step};
}

Result<VerifiedRank> VerifyRank(const HeartbeatRecord& beat, const StepScope& scope) {
  if (scope.srun) {
    // The node name goes to scontrol as a word of its own: never one that reads as an option.
    if (beat.node.empty() || beat.node[0] == '-') {
      return Status::NotFound("the record names node '" + beat.node + "'");
    }
    return VerifyByListPids(beat, scope);
  }
  if (Remote(beat, scope.this_host)) {
    return Status::NotFound("the record names host " + beat.host + ", not this host " +
                            scope.this_host + ", and the trainer runs here without srun");
  }
  if (!IsSelfOrDescendant(beat.pid, scope.child_pid)) {
    return Status::NotFound("pid " + std::to_string(beat.pid) +
                            " is not the trainer the launcher " + "started (pid " +
                            std::to_string(scope.child_pid) + ") nor one of its children");
  }
  return VerifiedRank{beat, ""};
}

std::string CaptureStacks(const VerifiedRank& rank, const StepScope& scope) {
  const HeartbeatRecord& beat = rank.beat;
  // Remotely the debugger is looked up there; gdb is the one scripts/setup.sh installs.
  std::string debugger = "gdb";
  if (!Remote(beat, scope.this_host) && FindExecutable("gdb").empty()) {
    if (FindExecutable("eu-stack").empty()) {
      return "(no stacks: neither gdb nor eu-stack is installed; scripts/setup.sh installs gdb)";
    }
    debugger = "eu-stack";
  }
  const std::vector<std::string> argv = StackCommand(beat, scope.job_id, scope.this_host, debugger);
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

std::string EndStep(const std::vector<VerifiedRank>& ranks, const StepScope& scope) {
  std::string done;
  auto add = [&done](const std::string& s) { done += (done.empty() ? "" : "; ") + s; };
  if (scope.srun) {
    std::set<std::string> steps;
    for (const VerifiedRank& r : ranks) steps.insert(r.step);
    for (const std::string& step : steps) {
      const std::vector<std::string> argv = EndStepCommand(scope.job_id, step);
      Result<ProcessResult> r = RunProcess(argv, kStackCaptureTimeoutS);
      const bool ok = r.ok() && r->exit_code == 0;
      add(CommandLine(argv) + (ok ? "" : " failed: " + (r.ok() ? r->err : r.status().ToString())));
    }
    return done;
  }
  for (const VerifiedRank& r : ranks) {
    // A descendant first (a wrapper's trainer), then the child itself; gone counts as ended.
    if (r.beat.pid != scope.child_pid && IsSelfOrDescendant(r.beat.pid, scope.child_pid) &&
        (::kill(pid_t(r.beat.pid), SIGKILL) == 0 || errno == ESRCH)) {
      add("SIGKILL to pid " + std::to_string(r.beat.pid));
    }
  }
  if (::kill(pid_t(scope.child_pid), SIGKILL) == 0 || errno == ESRCH) {
    add("SIGKILL to the trainer, pid " + std::to_string(scope.child_pid));
  }
  return done;
}

}  // namespace baton
