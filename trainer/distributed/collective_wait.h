// CollectiveWait: how long a rank waits for its peers in one collective, and what ends the wait
// (docs/trainer.md, "Stopping and resuming").
//
// A collective (the step's vote, a gradient all-reduce, an all-gather, a barrier) completes only
// when every rank joins it. A peer that hung, was stopped (SIGSTOP) or is slow keeps the others
// waiting, and a stop signal must still take effect on them, launcher or not. So a rank waiting
// in a CPU (Gloo) collective looks at its stop flag and the clock every 100 ms:
//   the collective completes                    carry on
//   a stop signal came (before or during the    leave: exit 75 (stop, requeue), no new checkpoint
//   wait) and the peers have not joined within   (the last committed one stands), naming the
//   stop_wait_s of it (of the wait's start when  collective and the signal
//   the signal is older), or a second stop
//   signal came
//   no signal and timeout_s passed              fail: exit 70 (a lost peer), naming the collective
// Inside a save the first signal does not bound the wait: the save finishes, as the stop protocol
// says (a second SIGTERM or SIGINT there exits at once, trainer/train/stop_signal.h). On CUDA
// (NCCL) a wait only orders streams on the device, so nothing is polled there. Pure; thread-safe.
#pragma once

#include <string>

#include "schema/status.h"

namespace baton {

struct CollectiveWaitLimits {
  double timeout_s = 600;   // a collective that takes longer is a lost peer
  double stop_wait_s = 60;  // after a stop signal, how long the peers may take to join
};

// The limits from BATON_COLLECTIVE_TIMEOUT_S (1 to 86400 s; default 600) and BATON_STOP_WAIT_S
// (0 to 86400 s; default 60), decimal seconds (null or "" for the default). Code::kConfig naming
// the variable and its value otherwise.
Result<CollectiveWaitLimits> CollectiveWaitLimitsFrom(const char* timeout_s,
                                                      const char* stop_wait_s);

struct CollectiveWaitState {
  double waited_s = 0;       // since the collective was issued
  double since_stop_s = -1;  // since the first stop signal (-1: none came)
  int stop_signals = 0;      // stop signals received so far (the first included)
  bool saving = false;       // inside a save's window
};

enum class WaitVerdict { kWait, kLeaveOnStop, kTimedOut };

WaitVerdict JudgeCollectiveWait(const CollectiveWaitState& s, const CollectiveWaitLimits& limits);

}  // namespace baton
