#include "trainer/distributed/collective_wait.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

namespace baton {

namespace {

Status Seconds(const char* name, const char* text, double lo, double hi, double* out) {
  if (text == nullptr || *text == '\0') return Status::Ok();
  const char* end = text + std::strlen(text);
  double x = 0;
  const auto [p, ec] = std::from_chars(text, end, x, std::chars_format::fixed);
  if (ec != std::errc() || p != end || !std::isfinite(x) || x < lo || x > hi) {
    return Status::Config(std::string("environment variable ") + name + "='" + text +
                          "' is not a number of seconds from " + std::to_string(int(lo)) + " to " +
                          std::to_string(int(hi)));
  }
  *out = x;
  return Status::Ok();
}

}  // namespace

Result<CollectiveWaitLimits> CollectiveWaitLimitsFrom(const char* timeout_s,
                                                      const char* stop_wait_s) {
  CollectiveWaitLimits l;
  if (Status st = Seconds("BATON_COLLECTIVE_TIMEOUT_S", timeout_s, 1, 86400, &l.timeout_s);
      !st.ok()) {
    return st;
  }
  if (Status st = Seconds("BATON_STOP_WAIT_S", stop_wait_s, 0, 86400, &l.stop_wait_s); !st.ok()) {
    return st;
  }
  return l;
}

WaitVerdict JudgeCollectiveWait(const CollectiveWaitState& s, const CollectiveWaitLimits& limits) {
  if (s.stop_signals > 0 && !s.saving) {
    if (s.stop_signals > 1) return WaitVerdict::kLeaveOnStop;
    // A signal older than the wait gives the peers the whole stop_wait_s from the wait's start.
    const double since = s.since_stop_s < 0 ? s.waited_s : std::min(s.since_stop_s, s.waited_s);
    if (since > limits.stop_wait_s) return WaitVerdict::kLeaveOnStop;
  }
  return s.waited_s > limits.timeout_s ? WaitVerdict::kTimedOut : WaitVerdict::kWait;
}

}  // namespace baton
