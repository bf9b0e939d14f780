#include "trainer/train/step_stop_watch.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <algorithm>

namespace baton {

std::string Where(StopPhase phase, int64_t step, int64_t micro, int64_t block) {
  const std::string n = std::to_string(step + 1), m = std::to_string(micro),
                    b = std::to_string(block);
  switch (phase) {
    case StopPhase::kForward:
    case StopPhase::kBackward:
      return std::string(Name(phase)) + " of step " + n + ", micro-step " + m +
             (block < 0 ? ", past block 0" : ", block " + b);
    case StopPhase::kMicroStart:
      return "between micro-steps of step " + n + ", before micro-step " + m;
    case StopPhase::kUpdate:
      return "the update of step " + n;
    case StopPhase::kSave:
    case StopPhase::kBetweenSteps:
      return std::string(Name(phase)) + " after step " + n;
    case StopPhase::kStartup:
      break;
  }
  return "start-up";
}

Vote TakeVote(ProcessGroupHandle& group, bool abandon, bool stop, int signal) {
  const std::string mine = {char(abandon ? 1 : 0), char(stop ? 1 : 0), char(signal)};
  Vote v;
  const std::vector<std::string> all = group.AllGatherBytes(mine);
  for (size_t r = 0; r < all.size(); ++r) {
    TORCH_CHECK(all[r].size() == 3, "the step's vote from rank ", r, " has ", all[r].size(),
                " bytes, not 3");
    v.abandon = v.abandon || all[r][0] != 0;
    v.stop = v.stop || all[r][1] != 0;
    if (v.signal == 0 && all[r][2] != 0) {
      v.signal = int(all[r][2]);
      v.signal_rank = int(r);
    }
  }
  return v;
}

void BlockWatch::At(BlockPass p, int64_t b) {
  const double now = MonotonicSeconds();
  if (block != -2 && p == pass) {
    if (p == BlockPass::kForward && b == block + 1 && block < layers) {
      forward_s[size_t(block)] = now - t;
    } else if (p == BlockPass::kBackward && b == block - 1 && block >= 0 && block < layers) {
      blocks_s.push_back(forward_s[size_t(block)] + (now - t));
      longest_s = std::max(longest_s, blocks_s.back());
    }
  }
  pass = p;
  block = b;
  t = now;
  SetStopPhase(p == BlockPass::kForward ? StopPhase::kForward : StopPhase::kBackward, step, micro,
               b);
  if (StopSignal() != 0) {
    throw LeaveMicroSteps(Where(
        p == BlockPass::kForward ? StopPhase::kForward : StopPhase::kBackward, step, micro, b));
  }
  const bool in_block = p == BlockPass::kForward ? b < layers : b >= 0;
  if (sleep_us > 0 && in_block) ::usleep(useconds_t(sleep_us));
}

StepAbandoned Abandoned(const Vote& vote, int64_t step, double block_s, const BlockWatch& watch,
                        const std::string& left) {
  StepAbandoned a;
  a.step = step;
  a.signal = vote.signal;
  a.signal_rank = vote.signal_rank;
  a.block_s = block_s;
  if (!watch.blocks_s.empty()) {
    std::vector<double> b = watch.blocks_s;
    std::nth_element(b.begin(), b.begin() + ptrdiff_t(b.size() / 2), b.end());
    a.block_median_s = b[b.size() / 2];
  }
  const StopLanding l = FirstStopLanding();
  if (l.signal != 0) {
    a.landed = Where(l.phase, l.step, l.micro, l.block);
    a.left = !left.empty() ? left : "at the vote, its micro-steps done";
    a.latency_s = MonotonicSeconds() - l.at_s;
  }
  return a;
}

}  // namespace baton
