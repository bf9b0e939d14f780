// AttemptHistory: what earlier attempts of a run did, read from its event files alone.
//
// The launcher decides whether to requeue (failure budget, restart budget, crash loop) on the
// compute node, where the database may not be reachable; the events files on the shared
// filesystem carry everything it needs. Pure function of the files; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace baton {

struct PastAttempt {
  std::string job_id;
  int64_t restart_count = 0;
  std::string events_path;
  int64_t step0 = 0;                 // attempt_start (or segment_start) step0
  std::optional<int64_t> last_step;  // steps finished (step rows and segment_end), like step0
  bool ended = false;                // has an attempt_end
  std::string action;                // attempt_end action
  std::string reason;                // attempt_end reason
  std::optional<int64_t> exit_code;

  bool made_progress() const { return last_step && *last_step > step0; }
};

// Every attempt of the run (one per events file), in the order they happened.
std::vector<PastAttempt> ReadAttemptHistory(const std::string& run_dir);

}  // namespace baton
