#include "orchestrator/launcher/hang_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "schema/file_kind.h"
#include "schema/run_folder.h"

namespace baton {

namespace {

// Minimum load/save budget, whatever the rank wrote: a slow save is not a hang.
constexpr double kMinTransferBudgetS = 60;

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string KindOf(mode_t mode) { return S_ISLNK(mode) ? "a symbolic link" : FileKind(mode); }

}  // namespace

HeartbeatFileRead ReadHeartbeatFile(const std::string& path) {
  HeartbeatFileRead out;
  struct stat ls {};
  if (::lstat(path.c_str(), &ls) != 0) {
    if (errno != ENOENT) {
      out.kind = HeartbeatFileRead::kUnreadable;
      out.what = std::strerror(errno);
    }
    return out;
  }
  if (!S_ISREG(ls.st_mode)) {
    out.kind = HeartbeatFileRead::kNotRegular;
    out.what = KindOf(ls.st_mode);
    return out;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    out.kind = err == ENOENT  ? HeartbeatFileRead::kAbsent
               : err == ELOOP ? HeartbeatFileRead::kNotRegular
                              : HeartbeatFileRead::kUnreadable;
    out.what = err == ELOOP ? "a symbolic link" : std::strerror(err);
    return out;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != ls.st_dev ||
      st.st_ino != ls.st_ino) {
    ::close(fd);
    out.kind = HeartbeatFileRead::kUnreadable;  // replaced between the two looks: read again
    out.what = "it changed while being opened";
    return out;
  }
  char buf[kHeartbeatRecordBytes + 1];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  ::close(fd);
  out.kind = HeartbeatFileRead::kRecord;
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  if (n == ssize_t(kHeartbeatRecordBytes)) {
    out.beat = ParseHeartbeat(std::string_view(buf, kHeartbeatRecordBytes));
  }
  return out;
}

std::string HangReport::StaleRanksText() const {
  std::string out;
  for (const StaleRank& r : stale) {
    out += (out.empty() ? "" : ",") + std::to_string(r.beat.rank) + ":" + Name(r.beat.phase);
  }
  return out;
}

HangWatch::HangWatch(std::string run_dir, int64_t ranks, int64_t step0, double started_at,
                     HangLimits limits)
    : run_dir_(std::move(run_dir)),
      ranks_(ranks),
      step0_(step0),
      started_at_(started_at),
      limits_(limits) {
  const RunFolder folder{run_dir_};
  for (int64_t r = 0; r < ranks_; ++r) {
    const HeartbeatFileRead read = ReadHeartbeatFile(folder.HeartbeatFile(r));
    if (read.beat) previous_[r] = FormatHeartbeat(*read.beat);
  }
}

double HangWatch::P99StepS() const {
  if (step_times_.empty()) return 0;
  std::vector<double> v = step_times_;
  const size_t k = size_t(std::ceil(0.99 * double(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
  return v[k];
}

std::optional<HeartbeatRecord> HangWatch::Current(int64_t rank) const {
  auto it = views_.find(rank);
  if (it == views_.end() || !it->second.suspended.empty()) return std::nullopt;
  return it->second.beat;
}

std::optional<HangReport> HangWatch::Poll(double now, std::ostream& log) {
  if (now - last_read_ < 1.0) return std::nullopt;
  last_read_ = now;
  const RunFolder folder{run_dir_};
  std::map<int64_t, HeartbeatFileRead> reads;
  for (int64_t r = 0; r < ranks_; ++r) reads[r] = ReadHeartbeatFile(folder.HeartbeatFile(r));
  Observe(reads, now, log);
  return Judge(now, log);
}

void HangWatch::Observe(const std::map<int64_t, HeartbeatFileRead>& reads, double now,
                        std::ostream& log) {
  for (const auto& [rank, read] : reads) ObserveOne(rank, read, now, log);
}

void HangWatch::Suspend(int64_t rank, RankView& v, const std::string& why, std::ostream& log) {
  if (v.suspended == why) return;
  v.suspended = why;
  log << "baton launch: heartbeat of rank " << rank << " ("
      << RunFolder{run_dir_}.HeartbeatFile(rank) << "): " << why
      << "; the rank is not judged until a live record is back\n"
      << std::flush;
}

void HangWatch::ObserveOne(int64_t rank, const HeartbeatFileRead& read, double now,
                           std::ostream& log) {
  RankView& v = views_[rank];
  if (read.kind == HeartbeatFileRead::kAbsent) {
    if (v.beat) Suspend(rank, v, "its file is gone", log);
    return;
  }
  if (read.kind == HeartbeatFileRead::kNotRegular) {
    Suspend(rank, v, "it is " + read.what + ", not a regular file", log);
    return;
  }
  if (read.kind == HeartbeatFileRead::kUnreadable) return;  // as a torn read: keep the previous
  const bool valid = read.beat && read.beat->rank == rank;
  const std::string text = valid ? FormatHeartbeat(*read.beat) : "";
  auto accept = [&] {
    v.beat = read.beat;
    v.text = text;
    v.dev = read.dev;
    v.ino = read.ino;
    v.changed_at = now;
    v.suspended.clear();
    v.pending_text.clear();
    v.pending_dev = 0;
    v.pending_ino = 0;
  };
  if (!v.beat) {  // the rank's first record: in whatever file holds it
    if (valid && previous_[rank] != text) accept();
    return;
  }
  if (read.dev == v.dev && read.ino == v.ino) {  // the file the record was first seen in
    if (valid && text != v.text) accept();
    return;
  }
  // Another file at the rank's path: a live writer must show itself by changing it.
  const bool same_pending = read.dev == v.pending_dev && read.ino == v.pending_ino;
  if (valid && same_pending && !v.pending_text.empty() && text != v.pending_text) {
    log << "baton launch: rank " << rank << " writes its new heartbeat file (inode " << read.ino
        << "); judged again\n"
        << std::flush;
    accept();
    return;
  }
  if (!same_pending || v.pending_text.empty()) {
    v.pending_dev = read.dev;
    v.pending_ino = read.ino;
    v.pending_text = text;
  }
  Suspend(rank, v,
          "the file was replaced (inode " + std::to_string(read.ino) +
              "; the rank's record was in inode " + std::to_string(v.ino) +
              "): not this rank's record",
          log);
}

std::optional<HangReport> HangWatch::Judge(double now, std::ostream& log) {
  // Step times: one sample per rank and finished step.
  for (const auto& [rank, v] : views_) {
    if (!v.beat || !v.suspended.empty()) continue;
    auto it = last_step_.find(rank);
    if (v.beat->step_s > 0 && (it == last_step_.end() || it->second != v.beat->step)) {
      step_times_.push_back(v.beat->step_s);
      last_step_[rank] = v.beat->step;
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
    auto it = views_.find(r);
    if (it == views_.end() || !it->second.beat) {
      missing.push_back(r);
      continue;
    }
    const RankView& v = it->second;
    if (!v.suspended.empty()) continue;  // said in the log when it happened
    const HeartbeatRecord& b = *v.beat;
    StaleRank s;
    s.beat = b;
    s.changed_at = v.changed_at;
    s.age_s = now - v.changed_at;
    const bool load = b.phase == HeartbeatPhase::kLoad, save = b.phase == HeartbeatPhase::kSave;
    const bool first_done = !load && !save && b.phase != HeartbeatPhase::kInit && b.step > step0_;
    if (load || save) {
      s.limit_s = std::max({b.budget_s, kMinTransferBudgetS, step_limit});
      s.why = "the " + std::string(Name(b.phase)) + " budget (" + Fmt(b.budget_s) +
              " s written by the rank, at least 60 s) without progress";
      // A segment's load comes before its first step, and no rate of this process is known yet.
      if (load && limits_.first_step_s > s.limit_s) {
        s.limit_s = limits_.first_step_s;
        s.why = "train.first_step_timeout_s " + Fmt(limits_.first_step_s) +
                " (a load's least budget) without progress";
      }
    } else if (!first_done) {
      s.limit_s = limits_.first_step_s;
      s.why = "train.first_step_timeout_s " + Fmt(limits_.first_step_s);
    } else {
      s.limit_s = step_limit;
      s.why = step_why;
    }
    if (s.age_s > s.limit_s) {
      report.last_heartbeat_at = std::max(report.last_heartbeat_at, v.changed_at);
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
        << s.beat.host << ", node " << s.beat.node << "): record unchanged for " << Fmt(s.age_s)
        << " s in " << Name(s.beat.phase) << " of step " << s.beat.step + 1 << " (micro "
        << s.beat.micro << "); limit " << Fmt(s.limit_s) << " s: " << s.why << "\n";
  }
  log << std::flush;
  return report;
}

}  // namespace baton
