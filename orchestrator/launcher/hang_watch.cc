#include "orchestrator/launcher/hang_watch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "schema/run_folder.h"

namespace baton {

namespace {

// Minimum load/save budget, whatever the rank wrote: a slow save is not a hang.
constexpr double kMinTransferBudgetS = 60;

std::optional<HeartbeatRecord> ReadBeat(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[kHeartbeatRecordBytes];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  ::close(fd);
  if (n != ssize_t(sizeof buf)) return std::nullopt;
  return ParseHeartbeat(std::string_view(buf, sizeof buf));
}

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string HangReport::StaleRanksText() const {
  std::string out;
  for (const StaleRank& r : stale) {
    out += (out.empty() ? "" : ",") + std::to_string(r.beat.rank) + ":" +
           HeartbeatPhaseName(r.beat.phase);
  }
  return out;
}

HangWatch::HangWatch(std::string run_dir, int64_t ranks, int64_t step0, double started_at,
                     HangLimits limits)
    : run_dir_(std::move(run_dir)),
      ranks_(ranks),
      step0_(step0),
      started_at_(started_at),
      limits_(limits) {}

double HangWatch::P99StepS() const {
  if (step_times_.empty()) return 0;
  std::vector<double> v = step_times_;
  const size_t k = size_t(std::ceil(0.99 * double(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
  return v[k];
}

std::optional<HangReport> HangWatch::Poll(double now, std::ostream& log) {
  if (now - last_read_ < 1.0) return std::nullopt;
  last_read_ = now;
  std::map<int64_t, HeartbeatRecord> read = beats_;
  const RunFolder folder{run_dir_};
  for (int64_t r = 0; r < ranks_; ++r) {
    std::optional<HeartbeatRecord> b = ReadBeat(folder.HeartbeatFile(r));
    // A record older than this attempt is a previous trainer's: as good as none.
    if (b && b->rank == r && b->wall >= started_at_ - 1.0) read[r] = *b;
  }
  return Judge(read, now, log);
}

std::optional<HangReport> HangWatch::Judge(const std::map<int64_t, HeartbeatRecord>& beats,
                                           double now, std::ostream& log) {
  beats_ = beats;
  // Step times: one sample per rank and finished step.
  for (const auto& [rank, b] : beats_) {
    auto it = last_step_.find(rank);
    if (b.step_s > 0 && (it == last_step_.end() || it->second != b.step)) {
      step_times_.push_back(b.step_s);
      last_step_[rank] = b.step;
    }
  }
  const double p99 = P99StepS();
  const double step_limit = std::max(limits_.min_s, limits_.factor * p99);
  const std::string step_why = "max(train.hang_min_s " + Fmt(limits_.min_s) + ", " +
                               Fmt(limits_.factor) + " x p99 step " + Fmt(p99) + " s)";
  HangReport report;
  report.detected_at = now;
  std::vector<int64_t> missing;
  for (int64_t r = 0; r < ranks_; ++r) {
    auto it = beats_.find(r);
    if (it == beats_.end()) {
      missing.push_back(r);
      continue;
    }
    const HeartbeatRecord& b = it->second;
    StaleRank s;
    s.beat = b;
    s.age_s = now - b.wall;
    const bool moving_data = b.phase == HeartbeatPhase::kLoad || b.phase == HeartbeatPhase::kSave;
    const bool first_done = !moving_data && b.phase != HeartbeatPhase::kInit && b.step > step0_;
    if (moving_data) {
      s.limit_s = std::max({b.budget_s, kMinTransferBudgetS, step_limit});
      s.why = "the " + std::string(HeartbeatPhaseName(b.phase)) + " budget (" + Fmt(b.budget_s) +
              " s written by the rank, at least 60 s)";
    } else if (!first_done) {
      s.limit_s = limits_.first_step_s;
      s.why = "train.first_step_timeout_s " + Fmt(limits_.first_step_s);
    } else {
      s.limit_s = step_limit;
      s.why = step_why;
    }
    if (s.age_s > s.limit_s) {
      report.last_heartbeat_at = std::max(report.last_heartbeat_at, b.wall);
      report.stale.push_back(std::move(s));
    }
  }
  // Never a hang from a missing file alone; said once, when the first step's budget has passed.
  if (!missing.empty() && !missing_logged_ && now - started_at_ > limits_.first_step_s) {
    missing_logged_ = true;
    std::string list;
    for (int64_t r : missing) list += (list.empty() ? "" : ", ") + std::to_string(r);
    log << "baton launch: no heartbeat from rank(s) " << list << " " << Fmt(now - started_at_)
        << " s after the start (" << RunFolder{run_dir_}.HeartbeatDir()
        << "); a missing heartbeat is not judged a hang\n"
        << std::flush;
  }
  if (report.stale.empty()) return std::nullopt;
  // The stalest first: usually the rank that stopped; the others wait for it in a collective.
  std::stable_sort(report.stale.begin(), report.stale.end(),
                   [](const StaleRank& a, const StaleRank& b) { return a.age_s > b.age_s; });
  for (const StaleRank& s : report.stale) {
    log << "baton launch: hang: rank " << s.beat.rank << " (pid " << s.beat.pid << " on "
        << s.beat.host << ", node " << s.beat.node << "): last heartbeat " << Fmt(s.age_s)
        << " s ago in " << HeartbeatPhaseName(s.beat.phase) << " of step " << s.beat.step + 1
        << " (micro " << s.beat.micro << "); limit " << Fmt(s.limit_s) << " s: " << s.why << "\n";
  }
  log << std::flush;
  return report;
}

}  // namespace baton
