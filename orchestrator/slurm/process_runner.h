// RunProcess: run a program to completion with a timeout, capturing stdout and stderr.
//
// The one way the orchestrator runs short external commands (sbatch, squeue, scontrol, scancel):
// fork + execv of an argv vector, never a shell, so no argument is ever re-parsed. The program
// is looked up in $PATH here (an unset or empty PATH finds nothing), so "not installed" is a
// clear Code::kUnavailable naming the command instead of exit 127 from a shell.
// Thread-safe (no shared state); the child runs in its own process group so a timeout kills it
// and anything it started.
#pragma once

#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

struct ProcessResult {
  int exit_code = -1;      // exit status, or 128 + signal when killed by one
  std::string out;         // stdout
  std::string err;         // stderr
  bool timed_out = false;  // killed after `timeout_s`
};

// The absolute path `name` resolves to through $PATH ("" when not found). Names containing '/'
// are returned as they are when executable.
std::string FindExecutable(const std::string& name);

// Code::kUnavailable when argv[0] is not found or cannot be executed; otherwise the result
// (check exit_code / timed_out).
[[nodiscard]] Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                               double timeout_s);

// "sbatch --parsable /x/sbatch.sh" for messages (arguments with spaces quoted).
std::string CommandLine(const std::vector<std::string>& argv);

}  // namespace baton
