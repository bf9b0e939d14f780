// Incident rules: what in a run's history is an incident, and when an open one is over.
//
// Read from what the store already holds after ingest and reconcile (attempt endings and their
// evidence, the run's status, its last step, its stop saves), so every way an attempt ends is
// seen the same way whether watch or serve ingested it. Each incident carries its cause in words,
// the attempt as J.R.S, the step, node and rank where known, and an excerpt of at most 2 KiB
// (the stale rank's stack for a hang, the last lines of the attempt's log for a crash).
// Pure functions except the log tail reader; thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"
#include "orchestrator/store/store_alerts.h"

namespace baton {

// The most an incident's excerpt holds.
inline constexpr size_t kExcerptBytes = 2048;
// The most an incident's cause holds (a run's reason in words, the trainer's message with it).
inline constexpr size_t kMaxCauseBytes = 1024;

// What the rules look at for one run.
struct RunView {
  RunRecord run;
  std::vector<AttemptRecord> attempts;   // in the order they happened
  std::optional<double> last_step_time;  // the newest effective step's time
  std::optional<double> grace_s;         // the stop-save budget's grace, when submit checked it
  struct StopSave {
    int64_t attempt_id = 0;
    int64_t step = 0;
    double seconds = 0;
  };
  std::vector<StopSave> stop_saves;  // measured stop saves
};

// "J.R.S": job id, restart count and in-job sequence.
std::string AttemptLabel(const AttemptRecord& a);

// Every incident the run shows at `now` (outcome open, or final for failed/completed), oldest
// attempt first; `stall_s` is the run's alerts.stall_s. `log_tail` reads an attempt's last log
// lines (for a crash's excerpt); it may return "".
std::vector<IncidentRecord> ObserveRun(
    const RunView& v, double now, double stall_s,
    const std::function<std::string(const AttemptRecord&)>& log_tail);

// The outcome an open incident has now: "recovered" (a later attempt made steps, the run
// completed, or a stalled run stepped again), "failed" (the run failed), "closed" (cancelled:
// no follow-up), or nullopt while it is still open.
std::optional<std::string> IncidentOutcome(const IncidentRecord& i, const RunView& v);

// The last lines of `path` that fit in kExcerptBytes (read from its end only); "" when unreadable.
std::string LogTail(const std::string& path);

// `text` cut to at most `bytes`, at a UTF-8 character boundary, keeping its end when `keep_end`
// (CutUtf8, store/utf8_cut.h).
std::string Clip(const std::string& text, size_t bytes, bool keep_end);

}  // namespace baton
