// StragglerWatch: a rank whose steps stay slow against the others' (docs/nodes.md,
// "Stragglers"), from the heartbeats the hang watch already reads.
//
// Each time every rank has moved past a new step, each rank's last step time (the heartbeat's
// step_s) is compared with the median over the ranks: a rank above factor x the median for
// `steps` such samples in a row is a straggler, named once per trainer with its node. With fewer
// than 3 ranks there is no median to stand out from: nothing is judged. Pure logic over the
// records it is given; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schema/heartbeat_record.h"

namespace baton {

struct StragglerRule {
  double factor = 3.0;  // k: times the median step time
  int64_t steps = 20;   // m: samples in a row
};

struct Straggler {
  int64_t rank = 0;
  std::string node;
  double step_s = 0;
  double median_s = 0;
  int64_t steps = 0;
};

class StragglerWatch {
 public:
  explicit StragglerWatch(StragglerRule rule = {}) : rule_(rule) {}

  // The ranks' current records (a missing rank: no sample this time). Returns the stragglers
  // found by this observation (each rank at most once).
  std::vector<Straggler> Observe(const std::map<int64_t, HeartbeatRecord>& beats);

  const std::vector<Straggler>& found() const { return found_; }

 private:
  StragglerRule rule_;
  int64_t sampled_step_ = -1;          // the step every rank had passed at the last sample
  std::map<int64_t, int64_t> streak_;  // per rank: slow samples in a row
  std::set<int64_t> named_;            // ranks already reported
  std::vector<Straggler> found_;
};

}  // namespace baton
