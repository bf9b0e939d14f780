// CancelRun: `baton cancel RUN` without the command line, shared by the CLI and the web server's
// POST /api/runs/ID/cancel. Marks the run folder cancelled, scancels the run's job, then marks
// the run CANCELLED. The folder's mark (RunFolder::CancelMark) comes first and atomically: the
// job's launcher gets scancel's TERM as it gets a preemption's warning signal, and the mark is how
// it knows not to requeue. If the mark cannot be written (kIo) nothing is cancelled; if scancel
// fails (SLURM down, kUnavailable) the mark is removed again and the store keeps the run as it was:
// it never claims a cancel that did not happen, and a failed cancel changes nothing. Cancelling a
// CANCELLED run again repeats the mark and the scancel (a job that outlived an older cancel).
// Thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

struct CancelRunResult {
  int64_t run_id = 0;
  std::string name;
  std::string job_id;  // the job scancelled ('' when the run had none)
  std::string status;  // the run's status afterwards
  bool changed = false;
  bool repeated = false;  // an already CANCELLED run's mark and scancel were repeated
};

// Cancels `run` (an id or a name). `by` says who asked, for the cancel mark ("`baton cancel`",
// "alice from the web page").
[[nodiscard]] Result<CancelRunResult> CancelRun(Store& store, SlurmClient& slurm,
                                                const std::string& run, const std::string& by,
                                                double now);

}  // namespace baton
