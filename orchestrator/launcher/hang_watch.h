// HangWatch: the launcher's judgement of the trainer ranks' heartbeats (schema/heartbeat_record.h;
// docs/orchestrator.md, "Hangs").
//
// A rank's age is the time since the launcher last saw its record change, on the launcher's own
// clock (`now`, monotonic seconds): the wall time a node writes is never compared with this
// host's, so a node whose clock is behind does not look hung. A rank is stale when its age is
// over its phase's budget:
//   before the attempt's first step is done (init, the first step) train.first_step_timeout_s
//   load                               the larger of the rank's budget and the first step's
//   save                               the budget the rank wrote (bytes at its rate x 3, >= 60 s)
//   any other phase                    max(train.hang_min_s, train.hang_factor x p99 step time)
// (a load or save is never judged by less than the step budget either). Loads and saves beat as
// bytes move, so a slow transfer that makes progress is never stale. The p99 is over the step
// times the ranks report in this attempt.
//
// What is read is a claim, checked before it counts: the file must be a regular file (opened
// O_NONBLOCK | O_NOFOLLOW, at most one record read), hold one valid record of its rank, and be
// the same file (device and inode) the rank's record was first seen in. A rank is not judged,
// and the log says so once, while its file is missing, not a regular file, or replaced (a rename
// over it, a restore): a replaced file counts again only once its record changes under the
// watch, that is once a live writer is behind it. A torn read keeps the rank's previous record.
// The files present when the watch starts are the previous trainer's: a record equal to one of
// them counts as none. Owned by the launcher's wait loop; not thread-safe.
#pragma once

#include <sys/types.h>

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
  double changed_at = 0;  // when the watch last saw the record change (the watch's clock)
  std::string why;        // how the limit was chosen, for the log
};

struct HangReport {
  std::vector<StaleRank> stale;  // the stalest first
  double detected_at = 0;        // the watch's clock
  double last_heartbeat_at = 0;  // the newest change among the stale ranks, the watch's clock
  // "1:micro-step,0:update"
  std::string StaleRanksText() const;
};

// One read of a rank's heartbeat file.
struct HeartbeatFileRead {
  enum Kind { kRecord, kAbsent, kNotRegular, kUnreadable } kind = kAbsent;
  std::optional<HeartbeatRecord> beat;  // kRecord: the record, when it is a whole valid one
  dev_t dev = 0;
  ino_t ino = 0;
  std::string what;  // kNotRegular / kUnreadable: what the path is, or the OS's reason
};
// Never blocks: lstat first (a FIFO or device is refused unopened), then open O_RDONLY |
// O_NONBLOCK | O_NOFOLLOW, fstat (the same regular file), one pread of at most one record.
HeartbeatFileRead ReadHeartbeatFile(const std::string& path);

class HangWatch {
 public:
  // `ranks` trainer ranks, starting at step index `step0`, launched at `started_at` (the clock
  // Poll is given). Reads the files already there: the previous trainer's.
  HangWatch(std::string run_dir, int64_t ranks, int64_t step0, double started_at,
            HangLimits limits);

  // Reads every rank's file (at most once a second) and judges it at `now`.
  std::optional<HangReport> Poll(double now, std::ostream& log);
  // Takes the reads made at `now`, rank by rank (what Poll does after reading).
  void Observe(const std::map<int64_t, HeartbeatFileRead>& reads, double now, std::ostream& log);
  // Judges the ranks' records as last observed, at `now`.
  std::optional<HangReport> Judge(double now, std::ostream& log);

  // The rank's record as the watch accepted it (nullopt: none, or not judged now).
  std::optional<HeartbeatRecord> Current(int64_t rank) const;
  // The p99 of the step times seen so far (0 before any).
  double P99StepS() const;

 private:
  struct RankView {
    std::optional<HeartbeatRecord> beat;  // the accepted record
    std::string text;                     // its formatted text: a change is a beat
    dev_t dev = 0;
    ino_t ino = 0;
    double changed_at = 0;
    // Not judged now: the file is missing, not a regular file, or replaced; `why` said once.
    std::string suspended;
    std::string pending_text;  // a replacement file's record, counted once it changes
    dev_t pending_dev = 0;
    ino_t pending_ino = 0;
  };
  void ObserveOne(int64_t rank, const HeartbeatFileRead& read, double now, std::ostream& log);
  void Suspend(int64_t rank, RankView& v, const std::string& why, std::ostream& log);

  std::string run_dir_;
  int64_t ranks_;
  int64_t step0_;
  double started_at_;
  HangLimits limits_;
  double last_read_ = -1e300;
  std::map<int64_t, RankView> views_;
  std::map<int64_t, std::string> previous_;  // per rank: the previous trainer's record text
  std::map<int64_t, int64_t> last_step_;     // per rank: the step whose time was last sampled
  std::vector<double> step_times_;
  bool missing_logged_ = false;
};

}  // namespace baton
