// RunTrainerProcess: start the trainer (or `srun trainer`) as a child, forward stop signals to
// it, and wait for it without ever blocking signals.
//
// Signal handlers only write the signal number to a self-pipe; the loop polls that pipe (and
// reaps the child with waitpid(WNOHANG)) every few hundred milliseconds, so the launcher stays
// responsive during a long run: SIGUSR1/SIGUSR2/SIGTERM/SIGINT are forwarded to the child as
// they arrive. Handlers are installed for the duration of the call and restored after.
// One call at a time per process (signal dispositions are process-wide).
#pragma once

#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

struct TrainerExit {
  int exit_code = -1;          // exit status, or 128 + signal when killed by one
  int term_signal = 0;         // the signal that killed it (0 when it exited)
  std::vector<int> forwarded;  // signals forwarded, in order
};

// `on_signal` (optional) is called from the wait loop (not from a handler) for each forwarded
// signal, for logging.
[[nodiscard]] Result<TrainerExit> RunTrainerProcess(const std::vector<std::string>& argv,
                                                    void (*on_signal)(int) = nullptr);

}  // namespace baton
