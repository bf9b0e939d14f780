// Stop signals: SIGUSR1, SIGUSR2, SIGTERM and SIGINT only set a flag (no work in the handler);
// the train step abandons the step in flight at the next block boundary (train_step.h), the
// ranks agree, the loop checkpoints the state of that step's start and exits 75 (or, when the
// signal came before the first step, exits 75 with nothing new to save). A signal during the
// optimizer update waits for the update, and the state after it is saved. A second SIGTERM or
// SIGINT while a checkpoint is being saved exits at once (the .partial folder it leaves is never
// loaded). Process-wide; install once from the main thread.
//
// Where a signal lands is recorded by the handler itself: the trainer marks its phase (forward
// or backward of micro-step m at block b, between micro-steps, the update, a save) with a few
// relaxed atomic stores, and the first stop signal copies that mark and the time it came.
//
// Loading baton-train (libtorch alone is hundreds of megabytes of relocations) takes long enough
// that SLURM's warning signal can arrive before main() runs, when the default action would kill
// the process with nothing saved and no event. BlockStopSignals runs from the executable's
// .preinit_array, before any library initialiser: the signals stay pending until
// InstallStopSignalHandlers has a handler in place and unblocks them.
#pragma once

#include <cstdint>
#include <optional>

#include "schema/stop_signals.h"
#include "schema/vocabularies.h"

namespace baton {

// Blocks the stop signals in the calling thread (pending ones wait, nothing is lost).
void BlockStopSignals();
// Unblocks them with their default actions (every command but train).
void UnblockStopSignals();
// Installs the flag-setting handler for every stop signal, then unblocks them.
void InstallStopSignalHandlers();
// The signal number that asked this process to stop, or 0.
int StopSignal();
// Its name ("USR1", ...), "none" for 0, "other" for a signal that is not a stop signal.
const char* StopSignalName(int sig);
// The signal the ranks agreed on (AdoptStopSignal), else this process's own, else 0: what
// segment_end names, also on a rank that got no signal itself.
int AgreedStopSignal();
void AdoptStopSignal(int sig);
// Marks the save window, during which a second SIGTERM or SIGINT exits immediately; the phase is
// kSave meanwhile (of the step last marked), kBetweenSteps after.
void SetSaving(bool saving);
// For tests: behave as if `sig` arrived.
void RaiseStopFlag(int sig);

// ---- Where the trainer is, and where the signal landed. ---------------------------------------

enum class StopPhase {
  kStartup,       // before the first step
  kBetweenSteps,  // reporting, periodic checks, reading the next step's data
  kMicroStart,    // between micro-steps: preparing micro-step m (before its first block)
  kForward,       // forward of micro-step m, in block b (b = L: past the last block)
  kBackward,      // backward of micro-step m, in block b (b = -1: past block 0)
  kUpdate,        // after the step's vote: reduce, clip, AdamW, all-gather
  kSave,          // writing a checkpoint
};
template <>
struct Vocabulary<StopPhase> {
  static constexpr Word<StopPhase> kWords[] = {{StopPhase::kStartup, "start-up"},
                                               {StopPhase::kBetweenSteps, "between steps"},
                                               {StopPhase::kMicroStart, "between micro-steps"},
                                               {StopPhase::kForward, "forward"},
                                               {StopPhase::kBackward, "backward"},
                                               {StopPhase::kUpdate, "update"},
                                               {StopPhase::kSave, "save"}};
};

// Called at every boundary; cheap. `step` is 0-based.
void SetStopPhase(StopPhase phase, int64_t step, int64_t micro = -1, int64_t block = -1);

struct StopLanding {
  int signal = 0;  // 0: no stop signal yet
  StopPhase phase = StopPhase::kStartup;
  int64_t step = -1, micro = -1, block = -1;
  double at_s = 0;  // MonotonicSeconds() when it came
};
StopLanding FirstStopLanding();
double MonotonicSeconds();  // CLOCK_MONOTONIC, the clock the handler reads

// Tests: send this process SIGUSR1 (a real signal, through the handler) when SetStopPhase next
// marks this phase, step, micro-step and block (-1: any). Spec "PHASE:STEP[:MICRO[:BLOCK]]",
// PHASE one of forward, backward, micro, update, save; an empty spec disarms. Returns false
// on a malformed spec.
bool ArmTestSignal(const char* spec);

}  // namespace baton
