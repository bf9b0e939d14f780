#include "orchestrator/launcher/hang_response.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "orchestrator/store/utf8_cut.h"
#include "schema/clock.h"
#include "schema/event_records.h"

namespace baton {

double MonotonicNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool HangResponse::operator()(int child_pid) {
  std::optional<HangReport> r = watch_.Poll(MonotonicNow(), log_);
  if (!r) return false;
  scope_.child_pid = child_pid;
  std::vector<VerifiedRank> ranks;
  std::vector<StaleRank> proved;
  for (const StaleRank& s : r->stale) {
    if (refused_.count({s.beat.rank, s.changed_at})) continue;
    Result<VerifiedRank> v = VerifyRank(s.beat, scope_);
    if (!v.ok()) {
      refused_.insert({s.beat.rank, s.changed_at});
      log_ << "baton launch: not acting on rank " << s.beat.rank
           << "'s heartbeat: " << v.status().message()
           << "; no process is attached to or signalled for it\n"
           << std::flush;
      continue;
    }
    ranks.push_back(*v);
    proved.push_back(s);
  }
  if (ranks.empty()) return false;
  // The record keeps Unix times; the watch's clock is this host's monotonic one.
  const double wall = UnixTimeNow();
  double newest = proved.front().changed_at;
  for (const StaleRank& s : proved) newest = std::max(newest, s.changed_at);
  r->stale = proved;
  r->last_heartbeat_at = wall - (r->detected_at - newest);
  r->detected_at = wall;
  report = r;
  for (const VerifiedRank& v : ranks) {
    const HeartbeatRecord& b = v.beat;
    log_ << "baton launch: stacks of rank " << b.rank << " (pid " << b.pid << " on " << b.host
         << "):\n"
         << std::flush;
    const std::string text = CaptureStacks(v, scope_);
    stacks += "=== rank " + std::to_string(b.rank) + " pid " + std::to_string(b.pid) + " on " +
              b.host + " (" + Name(b.phase) + ")\n" +
              CutUtf8(text, (kMaxHangStackBytes - kHangStackWordsBytes) / ranks.size(),
                      CutKeep::kStart, "\n(cut; the job log has the whole text)") +
              "\n";
    log_ << text << "\n" << std::flush;
  }
  log_ << "baton launch: ending the job step: " << EndStep(ranks, scope_) << "\n" << std::flush;
  return true;
}

}  // namespace baton
