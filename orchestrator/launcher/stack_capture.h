// Stacks of a hung rank, and ending its job step (docs/orchestrator.md, "Hangs").
//
// CaptureStacks runs `gdb -batch -p PID -ex 'thread apply all bt'` (or `eu-stack -p PID` when gdb
// is not installed) bounded to 30 s. A rank on this machine (its heartbeat's host is this host)
// is captured directly; one on another node through the job's allocation:
// `srun --jobid J --overlap -N1 -n1 -w NODE gdb ...`. KillRank ends a rank the same way (SIGKILL:
// it also ends a stopped process). The commands are built by the *Command functions, so both
// paths are testable without a second machine. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "schema/heartbeat_record.h"

namespace baton {

inline constexpr double kStackCaptureTimeoutS = 30;

// gethostname().
std::string ThisHost();

// The argv that captures every thread's stack of `beat`'s process: gdb or eu-stack (whichever
// is installed, gdb first), wrapped in srun --overlap when the rank runs on another host.
std::vector<std::string> StackCommand(const HeartbeatRecord& beat, const std::string& job_id,
                                      const std::string& this_host, const std::string& debugger);
std::vector<std::string> KillCommand(const HeartbeatRecord& beat, const std::string& job_id);

// The stacks as text (the tool's output), or why there are none ("gdb timed out after 30 s").
std::string CaptureStacks(const HeartbeatRecord& beat, const std::string& job_id);
// SIGKILL to the rank's process; false when it could not be sent (already gone counts as sent).
bool KillRank(const HeartbeatRecord& beat, const std::string& job_id);

}  // namespace baton
