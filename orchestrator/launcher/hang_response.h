// HangResponse: the hang watch's turn in the launcher's wait loop (docs/orchestrator.md, "Hangs").
//
// On every turn it polls the HangWatch. When ranks are stale it first proves that each is this
// attempt's own rank (VerifyRank, stack_capture.h); a claim that cannot be proved is logged once
// per record and never acted on: no debugger is attached and nothing is signalled. For the proved
// ranks it keeps the report (in Unix times, for attempt_end), captures their stacks (into the
// job log, and cut to the record's kMaxHangStackBytes in all), and ends the job step (EndStep).
// Owned by the launcher's wait loop; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>

#include "orchestrator/launcher/hang_watch.h"
#include "orchestrator/launcher/stack_capture.h"

namespace baton {

// What of the record's kMaxHangStackBytes (event_records.h) the launcher leaves for its own words
// around the stacks: each rank's "=== rank" line and the note on a cut stack. The rest is the
// stacks', every stale rank getting an equal share (the job log has them whole).
inline constexpr size_t kHangStackWordsBytes = 4 << 10;

// Seconds on this host's monotonic clock: the hang watch's clock.
double MonotonicNow();

class HangResponse {
 public:
  // `scope`'s child_pid is filled in from the wait loop's argument.
  HangResponse(HangWatch& watch, StepScope scope, std::ostream& log)
      : watch_(watch), scope_(std::move(scope)), log_(log) {}

  // RunTrainerProcess's on_tick: true once the step is being ended on a hang.
  bool operator()(int child_pid);

  std::optional<HangReport> report;  // the hang acted on, in Unix times
  std::string stacks;                // "=== rank R pid P on HOST (phase)\n<stacks>" per rank

 private:
  HangWatch& watch_;
  StepScope scope_;
  std::ostream& log_;
  std::set<std::pair<int64_t, double>> refused_;  // (rank, record seen at): claims refused
};

}  // namespace baton
