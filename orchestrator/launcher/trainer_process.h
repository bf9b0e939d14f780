// RunTrainerProcess: start the trainer (or `srun trainer`) as a child, forward stop signals to
// it, and wait for it without ever blocking signals.
//
// Signal handlers only write the signal number to a self-pipe; the loop polls that pipe (and
// reaps the child with waitpid(WNOHANG)) every few hundred milliseconds, so the launcher stays
// responsive during a long run: SIGUSR1/SIGUSR2/SIGTERM/SIGINT are forwarded to the child as
// they arrive. Handlers are installed for the duration of the call and restored after.
// One call at a time per process (signal dispositions are process-wide).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

struct TrainerExit {
  int exit_code = -1;           // exit status, or 128 + signal when killed by one
  int term_signal = 0;          // the signal that killed it (0 when it exited)
  std::vector<int> forwarded;   // signals forwarded, in order
  bool ended_by_watch = false;  // `on_tick` asked for the end (a hang)
};

// Seconds the child gets to exit after `on_tick` asked for the end (the watch has already
// killed the ranks; srun then tears the job step down) before it gets SIGKILL.
inline constexpr double kEndGraceS = 30;

// `on_signal` (optional) is called from the wait loop (not from a handler) for each forwarded
// signal, for logging. `on_tick` (optional) is called on every turn of the wait loop with the
// child's pid; when it returns true the child is ending (the hang watch killed its ranks): it
// is waited for up to kEndGraceS, then killed.
[[nodiscard]] Result<TrainerExit> RunTrainerProcess(
    const std::vector<std::string>& argv, void (*on_signal)(int) = nullptr,
    const std::function<bool(int child_pid)>& on_tick = nullptr);

}  // namespace baton
