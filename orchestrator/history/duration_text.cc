#include "orchestrator/history/duration_text.h"

#include <cmath>
#include <cstdio>

namespace baton {

namespace {

// Hours from which the "Nh Mm" form gives way to an exponent (a million hours: 114 years).
constexpr double kMaxClockHours = 1e6;
// Counts from which a rounded count is written with an exponent (well inside int64 and exact
// doubles, so "%.0f" never prints a digit the double does not hold).
constexpr double kMaxPlainCount = 1e15;

}  // namespace

std::string DurationText(double s) {
  char buf[64];
  if (!std::isfinite(s) || s < 0) return "-";
  // All arithmetic in doubles: an int cast of a large figure is undefined.
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%.0fm %.0fs", std::floor(s / 60), std::fmod(std::floor(s), 60));
  } else if (s / 3600 < kMaxClockHours) {
    std::snprintf(buf, sizeof buf, "%.0fh %.0fm", std::floor(s / 3600),
                  std::fmod(std::floor(s / 60), 60));
  } else {
    std::snprintf(buf, sizeof buf, "%.3g h", s / 3600);
  }
  return buf;
}

std::string CountText(double count) {
  char buf[64];
  if (!std::isfinite(count)) return "-";
  if (std::fabs(count) < kMaxPlainCount) {
    std::snprintf(buf, sizeof buf, "%.0f", std::round(count));
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", count);
  }
  return buf;
}

}  // namespace baton
