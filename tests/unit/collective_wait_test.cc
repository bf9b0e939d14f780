// How long a rank waits for its peers in a collective (trainer/distributed/collective_wait.h):
// a stop signal bounds the wait, a second one ends it, and the timeout names a lost peer.
#include "trainer/distributed/collective_wait.h"

#include <gtest/gtest.h>

namespace baton {
namespace {

CollectiveWaitState State(double waited, double since_stop, int signals, bool saving = false) {
  CollectiveWaitState s;
  s.waited_s = waited;
  s.since_stop_s = since_stop;
  s.stop_signals = signals;
  s.saving = saving;
  return s;
}

TEST(CollectiveWait, AStopSignalBoundsTheWaitAndASecondEndsIt) {
  const CollectiveWaitLimits l{/*timeout_s=*/600, /*stop_wait_s=*/60};
  EXPECT_EQ(JudgeCollectiveWait(State(30, -1, 0), l), WaitVerdict::kWait);
  EXPECT_EQ(JudgeCollectiveWait(State(500, 59, 1), l), WaitVerdict::kWait);
  EXPECT_EQ(JudgeCollectiveWait(State(500, 61, 1), l), WaitVerdict::kLeaveOnStop);
  // A signal older than the wait (a long save ran since): the peers get stop_wait_s of this wait.
  EXPECT_EQ(JudgeCollectiveWait(State(10, 900, 1), l), WaitVerdict::kWait);
  EXPECT_EQ(JudgeCollectiveWait(State(61, 900, 1), l), WaitVerdict::kLeaveOnStop);
  EXPECT_EQ(JudgeCollectiveWait(State(0.2, 0.1, 2), l), WaitVerdict::kLeaveOnStop);
  // Inside a save the first signal waits for the save (a second TERM/INT exits in the handler).
  EXPECT_EQ(JudgeCollectiveWait(State(300, 300, 1, true), l), WaitVerdict::kWait);
  EXPECT_EQ(JudgeCollectiveWait(State(300, 300, 2, true), l), WaitVerdict::kWait);
  // No signal: a lost peer once the timeout passed.
  EXPECT_EQ(JudgeCollectiveWait(State(600.5, -1, 0), l), WaitVerdict::kTimedOut);
  EXPECT_EQ(JudgeCollectiveWait(State(700, 700, 1, true), l), WaitVerdict::kTimedOut);
}

TEST(CollectiveWait, TheLimitsAreDecimalSecondsInRange) {
  Result<CollectiveWaitLimits> d = CollectiveWaitLimitsFrom(nullptr, "");
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(d->timeout_s, 600);
  EXPECT_DOUBLE_EQ(d->stop_wait_s, 60);
  Result<CollectiveWaitLimits> v = CollectiveWaitLimitsFrom("30", "2.5");
  ASSERT_TRUE(v.ok());
  EXPECT_DOUBLE_EQ(v->timeout_s, 30);
  EXPECT_DOUBLE_EQ(v->stop_wait_s, 2.5);
  EXPECT_TRUE(CollectiveWaitLimitsFrom(nullptr, "0").ok());
  for (const char* bad : {"0x10", "1e308", "-1", "0", "abc", "86401", "nan", "inf", " 5"}) {
    Result<CollectiveWaitLimits> r = CollectiveWaitLimitsFrom(bad, nullptr);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kConfig);
    EXPECT_NE(r.status().message().find("BATON_COLLECTIVE_TIMEOUT_S='" + std::string(bad) + "'"),
              std::string::npos)
        << r.status().message();
  }
  EXPECT_FALSE(CollectiveWaitLimitsFrom(nullptr, "-0.5").ok());
}

}  // namespace
}  // namespace baton
