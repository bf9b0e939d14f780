// Stop signals: SIGUSR1, SIGUSR2, SIGTERM and SIGINT only set a flag (no work in the handler);
// the train loop finishes the current optimizer step, agrees with the other ranks, checkpoints
// and exits 75 (or, when the signal came before the first step, exits 75 with nothing new to
// save). A second SIGTERM or SIGINT while a checkpoint is being saved exits at once (the .partial
// folder it leaves is never loaded). Process-wide; install once from the main thread.
//
// Loading baton-train (libtorch alone is hundreds of megabytes of relocations) takes long enough
// that SLURM's warning signal can arrive before main() runs, when the default action would kill
// the process with nothing saved and no event. BlockStopSignals runs from the executable's
// .preinit_array, before any library initialiser: the signals stay pending until
// InstallStopSignalHandlers has a handler in place and unblocks them.
#pragma once

namespace baton {

// Blocks the stop signals in the calling thread (pending ones wait, nothing is lost).
void BlockStopSignals();
// Unblocks them with their default actions (every command but train).
void UnblockStopSignals();
// Installs the flag-setting handler for every stop signal, then unblocks them.
void InstallStopSignalHandlers();
// The signal number that asked us to stop, or 0.
int StopSignal();
const char* StopSignalName(int sig);
// Marks the save window, during which a second SIGTERM or SIGINT exits immediately.
void SetSaving(bool saving);
// For tests: behave as if `sig` arrived.
void RaiseStopFlag(int sig);

}  // namespace baton
