#include "schema/grace_seconds.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace baton {

Result<double> ParseGraceSeconds(const std::string& text) {
  size_t i = 0, digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    size_t fraction = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++fraction;
    if (fraction == 0) digits = 0;  // "3." reads as a typo, not as 3
  }
  // Bounded before strtod: "000...1" of any length is refused by its length, not converted.
  const bool decimal = digits > 0 && i == text.size() && text.size() <= 32;
  const double x = decimal ? std::strtod(text.c_str(), nullptr) : -1;
  if (!decimal || !(x >= 0 && x <= kMaxGraceS)) {
    char range[64];
    std::snprintf(range, sizeof range, "[0, %.0f]", kMaxGraceS);
    const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
    return Status::Config(std::string(kGraceEnv) + "='" + shown + "' is not decimal seconds in " +
                          range +
                          " (digits with an optional fraction, like 30 or 2.5); unset it to let "
                          "a background save always finish");
  }
  return x;
}

std::string GraceSecondsText(double seconds) {
  const double s = std::isnan(seconds) ? 0 : std::fmin(std::fmax(seconds, 0), kMaxGraceS);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", std::floor(s));
  return buf;
}

}  // namespace baton
