// The history views of a run as terminal text, for `baton show` and `baton attempts`: the
// attempt table and how each attempt ended, skipped steps' episode ids, where the wall time
// went, and the tail of an attempt's log. The figures come from the history views the web UI
// shows too (orchestrator/history/); only their text form is here.
//
// Text the trainer or the data wrote (messages, episode ids, the run's reason) reaches the
// terminal through PrintableText: control characters are shown as escapes, never sent raw.
// Step and attempt numbers are 1-based like the trainer's progress line and messages, and the
// web UI's (schema/step_numbers.h). Writes to std::cout;
// single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"
#include "orchestrator/store/run_time_buckets.h"
#include "orchestrator/store/series_values.h"

namespace baton {

// `s` with every control character (C0, DEL, and C1 as UTF-8) written as an escape, so a message
// or an id can neither move the cursor nor rewrite the terminal; other UTF-8 passes unchanged.
std::string PrintableText(const std::string& s);

// The attempt table, then one line per attempt saying how it ended (messages are too long for
// a column).
void PrintAttemptTable(const std::vector<AttemptRecord>& attempts,
                       const ExpectedSchedule& schedule);

// "ep_1, ep_2, ... (+N more)" for one skipped step.
std::string EpisodeList(const std::vector<std::string>& ids);

// Where the run's wall time went (run_time_buckets.h): ETTR, the buckets that are not zero, and
// the checkpoint interval that would lose the least time.
void PrintTimeBuckets(const RunTimeBuckets& t);

// The last `lines` lines of the attempt's log file (logs/<job_id>.out), indented; nothing when
// there is none. The same reader as the web UI's log viewer: nothing outside the run folder is
// opened.
void PrintLogTail(const std::string& run_dir, const AttemptRecord& a, size_t lines);

// The attempt number (1-based, the ATTEMPT column) of an attempt id in `attempts`, 0 when
// unknown.
int64_t AttemptNumberOf(const std::vector<AttemptRecord>& attempts, int64_t attempt_id);

}  // namespace baton
