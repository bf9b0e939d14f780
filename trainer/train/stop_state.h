// What a rank that waits for its peers in a collective reads of the stop signals
// (trainer/distributed/collective_wait.h); the signals themselves are stop_signal.h's. Both are
// read from the handler's async-signal-safe state; thread-safe.
#pragma once

namespace baton {

// Stop signals received so far (SIGUSR1, SIGUSR2, SIGTERM, SIGINT; RaiseStopFlag counts too).
int StopSignalCount();
// Whether the rank is inside a save's window (SetSaving(true)).
bool InStopSave();

}  // namespace baton
