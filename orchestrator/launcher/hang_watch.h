// HangWatch: the launcher's judgement of the trainer ranks' heartbeats (schema/heartbeat_record.h;
// docs/orchestrator.md, "Hangs").
//
// A rank is stale when its newest heartbeat is older than its phase's budget:
//   before the attempt's first step is done (init, load, the first step) train.first_step_timeout_s
//   load / save                        the budget the rank wrote (bytes at its rate x 3, >= 60 s)
//   any other phase                    max(train.hang_min_s, train.hang_factor x p99 step time)
// (a load or save is never judged by less than the step budget either). The p99 is over the step
// times the ranks report in this attempt. A rank without a heartbeat file is never called hung:
// the watch says so in the log once and waits. A record from before the attempt started (a file
// the launcher could not clear) counts as none. A torn read keeps the rank's previous record.
// Owned by the launcher's wait loop; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "schema/heartbeat_record.h"

namespace baton {

struct HangLimits {
  double min_s = 60;
  double factor = 5;
  double first_step_s = 600;
};

struct StaleRank {
  HeartbeatRecord beat;
  double age_s = 0;
  double limit_s = 0;
  std::string why;  // how the limit was chosen, for the log
};

struct HangReport {
  std::vector<StaleRank> stale;  // the stalest first
  double detected_at = 0;        // Unix seconds
  double last_heartbeat_at = 0;  // the newest heartbeat among the stale ranks
  // "1:micro-step,0:update"
  std::string StaleRanksText() const;
};

class HangWatch {
 public:
  // `ranks` trainer ranks, starting at step index `step0`, launched at `started_at`.
  HangWatch(std::string run_dir, int64_t ranks, int64_t step0, double started_at,
            HangLimits limits);

  // Reads every rank's heartbeat (at most once a second) and judges it at `now`.
  std::optional<HangReport> Poll(double now, std::ostream& log);
  // Judges the given records at `now` (no files); what Poll does after reading.
  std::optional<HangReport> Judge(const std::map<int64_t, HeartbeatRecord>& beats, double now,
                                  std::ostream& log);

  // The newest record of every rank that has one (the PIDs to end, the hosts they run on).
  const std::map<int64_t, HeartbeatRecord>& beats() const { return beats_; }
  // The p99 of the step times seen so far (0 before any).
  double P99StepS() const;

 private:
  std::string run_dir_;
  int64_t ranks_;
  int64_t step0_;
  double started_at_;
  HangLimits limits_;
  double last_read_ = 0;
  std::map<int64_t, HeartbeatRecord> beats_;
  std::map<int64_t, int64_t> last_step_;  // per rank: the step whose time was last sampled
  std::vector<double> step_times_;
  bool missing_logged_ = false;
};

}  // namespace baton
