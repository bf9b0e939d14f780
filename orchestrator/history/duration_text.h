// DurationText and CountText: a span of seconds and a count as the CLI's history views print
// them ("5.2 s", "3m 4s", "1h 2m", "every 1200 steps"). Both take any double a computation can
// give — NaN, ±Inf, 1e308, negatives — and never convert an out-of-range value to an integer:
// the figures come from event times a trainer wrote, and a wrong clock must not turn into
// "-2147483648h". Pure functions; thread-safe.
#pragma once

#include <string>

namespace baton {

// "-" for NaN, Inf and negatives; "5.2 s" under a minute, "3m 4s" under an hour, "1h 2m" under
// a million hours, then "2.78e+304 h".
std::string DurationText(double seconds);

// The count rounded to a whole number ("1200"), "1.2e+20" from 1e15 on, "-" for NaN and Inf.
std::string CountText(double count);

}  // namespace baton
