// Stop signals: SIGUSR1, SIGUSR2 and SIGTERM only set a flag (no work in the handler); the train
// loop finishes the current optimizer step, agrees with the other ranks, checkpoints and exits 75.
// A second SIGTERM while a checkpoint is being saved exits at once (the .partial folder it leaves
// is never loaded). Process-wide; install once from the main thread.
#pragma once

namespace baton {

void InstallStopSignalHandlers();
// The signal number that asked us to stop, or 0.
int StopSignal();
const char* StopSignalName(int sig);
// Marks the save window, during which a second SIGTERM exits immediately.
void SetSaving(bool saving);
// For tests: behave as if `sig` arrived.
void RaiseStopFlag(int sig);

}  // namespace baton
