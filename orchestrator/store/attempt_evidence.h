// Why an attempt stopped, in the words of each witness: the launcher's end reason and exit code,
// the trainer's segment_end (reason, one-line message, signal, exit code) and SLURM's state,
// Reason and ExitCode. This unit derives the one figure no witness states alone — the signal —
// and names the attempt's log file; the CLI (`baton show`) and the API print the same evidence.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "orchestrator/store/records.h"

namespace baton {

// "SEGV" for 11, "KILL" for 9, ...; "signal N" for one without a common name.
std::string SignalName(int number);

// The signal that ended the attempt, '' when none is known: the trainer's own (segment_end),
// else an exit code above 128 (128 + N, as a shell reports a child killed by signal N), else the
// signal half of SLURM's ExitCode "status:signal" when it is not 0.
std::string AttemptSignal(const AttemptRecord& a);

// The attempt's stdout/stderr file relative to the run folder ("logs/<job_id>.out", as the
// sbatch script's --output writes it; one file per job, appended to by its restarts), or
// nullopt when the job id could not name a file inside logs/ (anything but [A-Za-z0-9_.-],
// or a leading dot).
std::optional<std::string> AttemptLogPath(const AttemptRecord& a);

}  // namespace baton
