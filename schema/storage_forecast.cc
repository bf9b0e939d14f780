#include "schema/storage_forecast.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>

namespace baton {

bool RanksBefore(double a_value, int64_t a_step, double b_value, int64_t b_step) {
  if (std::isnan(a_value)) return false;
  if (std::isnan(b_value)) return true;
  return a_value != b_value ? a_value < b_value : a_step < b_step;
}

std::vector<bool> RetentionKeeps(const std::vector<RetainedCheckpoint>& newest_first,
                                 const RetentionRule& rule) {
  std::vector<bool> keep;
  int64_t kept_recent = 0;
  bool kept_finite = false;
  for (const RetainedCheckpoint& c : newest_first) {
    const bool recent = kept_recent < rule.keep_last;
    const bool milestone = rule.keep_every > 0 && c.step % rule.keep_every == 0;
    // The newest checkpoint known to be finite survives even when newer ones are not (written
    // by an older build, or by hand): a diverged run can always go back to it.
    const bool newest_finite = c.finite && !kept_finite;
    // A checkpoint waiting for its value may turn out the best; deleting it would lose that.
    const bool waiting = rule.best_k > 0 && c.awaiting_eval;
    if (c.finite) kept_finite = true;
    if (recent) ++kept_recent;
    keep.push_back(recent || milestone || newest_finite || waiting);
  }
  if (rule.best_k <= 0) return keep;
  // The best are ranked among the checkpoints on disk only: one deleted earlier was outside
  // the best then, and the best only get better, so it stays outside.
  std::vector<size_t> ranked;
  for (size_t i = 0; i < newest_first.size(); ++i) {
    if (!std::isnan(newest_first[i].value)) ranked.push_back(i);
  }
  std::sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    return RanksBefore(newest_first[a].value, newest_first[a].step, newest_first[b].value,
                       newest_first[b].step);
  });
  for (size_t r = 0; r < ranked.size() && int64_t(r) < rule.best_k; ++r) keep[ranked[r]] = true;
  return keep;
}

namespace {

int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t p = 0;
  return __builtin_mul_overflow(a, b, &p) ? INT64_MAX : p;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t s = 0;
  return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
}

}  // namespace

int64_t RetainedCount(int64_t steps, int64_t every, int64_t keep_last, int64_t keep_every,
                      int64_t best_k) {
  if (steps < 1) return 0;
  if (best_k > 0) {
    // The best may all lie outside the others; there are never more than the saves.
    const int64_t saves = (steps - 1) / std::max<int64_t>(every, 1) + 1;
    return std::min(saves,
                    SaturatingAdd(RetainedCount(steps, every, keep_last, keep_every), best_k));
  }
  if (every < 1) every = 1;
  // Saves: k * every for k = 1..below (each < steps), and steps itself.
  const int64_t below = (steps - 1) / every;
  const int64_t last = std::min(std::max<int64_t>(keep_last, 1), below + 1);
  if (keep_every <= 0) return last;
  // A save below steps is a milestone when it is a multiple of lcm(every, keep_every); the
  // final save is among the last ones kept whatever it is.
  const int64_t g = std::gcd(every, keep_every);
  int64_t lcm = 0;
  if (__builtin_mul_overflow(every / g, keep_every, &lcm) || lcm > steps) return last;
  const int64_t milestones = (steps - 1) / lcm;
  // Those already among the newest `last`: the saves k * every, k in [below - last + 2, below].
  int64_t among_last = 0;
  if (last >= 2) {
    const int64_t lo = (below - last + 2) * every, hi = below * every;
    among_last = hi / lcm - (lo - 1) / lcm;
  }
  return last + milestones - among_last;
}

StorageForecast ForecastStorage(const StorageInputs& in) {
  StorageForecast f;
  f.checkpoint_bytes = in.checkpoint_bytes;
  // Every save is finite (a run stops before writing one that is not), so the newest-finite
  // rule keeps nothing beyond keep_last / keep_every / keep_best.
  f.retained = RetainedCount(in.steps, in.every, in.keep_last, in.keep_every, in.keep_best_k);
  f.checkpoints_bytes = SaturatingMul(f.retained, in.checkpoint_bytes);
  const int64_t n_saves = in.steps < 1 ? 0 : (in.steps - 1) / std::max<int64_t>(in.every, 1) + 1;
  f.events_bytes = SaturatingAdd(SaturatingMul(in.steps, kStepEventBytes),
                                 SaturatingMul(n_saves, kSaveRecordBytes) + kAttemptFixedBytes / 2);
  const int64_t lines = in.log_every >= 1 ? in.steps / in.log_every + 1 : in.steps;
  f.logs_bytes = SaturatingAdd(SaturatingMul(lines, kProgressLineBytes),
                               SaturatingMul(n_saves, kSaveRecordBytes) + kAttemptFixedBytes / 2);
  f.footprint_bytes =
      SaturatingAdd(f.checkpoints_bytes, SaturatingAdd(f.events_bytes, f.logs_bytes));
  return f;
}

void Judge(StorageForecast* f) {
  f->fits = f->footprint_bytes <= f->free_bytes &&
            (!f->quota_free_bytes || f->footprint_bytes <= *f->quota_free_bytes);
}

nlohmann::ordered_json StorageForecast::ToJson() const {
  return {
      {"footprint_bytes", footprint_bytes},
      {"free_bytes", free_bytes},
      {"fits", fits},
      {"folder", folder},
      {"quota_free_bytes", quota_free_bytes ? nlohmann::ordered_json(*quota_free_bytes) : nullptr},
      {"quota_source", quota_source.empty() ? nlohmann::ordered_json(nullptr)
                                            : nlohmann::ordered_json(quota_source)},
      {"checkpoint_bytes", checkpoint_bytes},
      {"retained_checkpoints", retained},
      {"checkpoints_bytes", checkpoints_bytes},
      {"events_bytes", events_bytes},
      {"logs_bytes", logs_bytes}};
}

std::string StorageForecast::Line() const {
  std::string s = "storage: " + ByteText(footprint_bytes) + " forecast (" +
                  std::to_string(retained) + " checkpoint(s) of " + ByteText(checkpoint_bytes) +
                  " kept, events and logs " + ByteText(events_bytes + logs_bytes) + ") against " +
                  ByteText(free_bytes) + " free in " + folder;
  if (quota_free_bytes) s += " and " + ByteText(*quota_free_bytes) + " left of the " + quota_source;
  return s + (fits ? ": fits" : ": DOES NOT FIT");
}

Result<int64_t> FreeBytes(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) {
    return Status::Io(path + ": cannot ask its filesystem for free space: " + std::strerror(errno));
  }
  const int64_t unit = st.f_frsize != 0 ? int64_t(st.f_frsize) : int64_t(st.f_bsize);
  return SaturatingMul(int64_t(st.f_bavail), unit);
}

std::string ByteText(int64_t bytes) {
  if (bytes < 1000) return std::to_string(bytes) + " B";
  static const char* const kUnits[] = {"kB", "MB", "GB", "TB", "PB", "EB"};
  double v = double(bytes) / 1000;
  int u = 0;
  while (v >= 999.5 && u < 5) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf,
                v >= 99.95   ? "%.0f %s"
                : v >= 9.995 ? "%.1f %s"
                             : "%.2f %s",
                v, kUnits[u]);
  return buf;
}

}  // namespace baton
