// DurationText / CountText: every double a computation over event times can give prints as
// sensible text — never an integer conversion gone out of range ("-2147483648h").
#include "orchestrator/history/duration_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace baton {
namespace {

TEST(DurationText, PrintsOrdinarySpans) {
  EXPECT_EQ(DurationText(0), "0.0 s");
  EXPECT_EQ(DurationText(5.24), "5.2 s");
  EXPECT_EQ(DurationText(184), "3m 4s");
  EXPECT_EQ(DurationText(3720), "1h 2m");
  EXPECT_EQ(DurationText(90061), "25h 1m");
}

TEST(DurationText, IsSafeForAnyDouble) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(DurationText(std::nan("")), "-");
  EXPECT_EQ(DurationText(kInf), "-");
  EXPECT_EQ(DurationText(-kInf), "-");
  EXPECT_EQ(DurationText(-1), "-");
  EXPECT_EQ(DurationText(-1e308), "-");
  EXPECT_EQ(DurationText(1e308), "2.78e+304 h");
  EXPECT_EQ(DurationText(std::numeric_limits<double>::max()), "4.99e+304 h");
  // Past what an int holds in hours (2^31 h), and at the edge of the "h m" form.
  EXPECT_EQ(DurationText(3600.0 * 3e9), "3e+09 h");
  EXPECT_EQ(DurationText(3600.0 * 999999 + 120), "999999h 2m");
  for (double v : {1e10, 1e15, 1e20, 7.7e12}) {
    EXPECT_EQ(DurationText(v).find('-'), std::string::npos) << v;
  }
}

TEST(CountText, RoundsAndStaysSafe) {
  EXPECT_EQ(CountText(1199.6), "1200");
  EXPECT_EQ(CountText(0), "0");
  EXPECT_EQ(CountText(-3.2), "-3");
  EXPECT_EQ(CountText(1e308), "1e+308");
  EXPECT_EQ(CountText(9.3e18), "9.3e+18");  // past int64: llround's result would be undefined
  EXPECT_EQ(CountText(std::nan("")), "-");
  EXPECT_EQ(CountText(std::numeric_limits<double>::infinity()), "-");
}

}  // namespace
}  // namespace baton
