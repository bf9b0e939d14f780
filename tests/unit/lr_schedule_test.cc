#include "schema/lr_schedule.h"

#include <gtest/gtest.h>

namespace baton {
namespace {

// The worked examples of docs/design.md ("The learning rate"), in float64.
TEST(LrScheduleTest, ReproducesTheDesignDocWorkedExamples) {
  LrSchedule resume_1500{/*base_lr=*/3e-5, /*warmup_steps=*/200, /*step0=*/1500,
                         /*resume_warmup=*/50};
  EXPECT_NEAR(resume_1500.At(1500 + 0), 6e-7, 1e-21);
  EXPECT_NEAR(resume_1500.At(1500 + 49), 3e-5, 1e-21);
  EXPECT_NEAR(resume_1500.At(1500 + 200), 3e-5, 1e-21);
  LrSchedule resume_100{3e-5, 200, 100, 50};
  EXPECT_NEAR(resume_100.At(100), 3e-7, 1e-21);  // 3e-5 * 0.5 * 0.02
}

TEST(LrScheduleTest, WarmupThenConstantWithoutResumeFactor) {
  LrSchedule fresh{1e-3, 200, 0, 0};
  EXPECT_EQ(fresh.At(0), 0.0);
  EXPECT_DOUBLE_EQ(fresh.At(100), 5e-4);
  EXPECT_DOUBLE_EQ(fresh.At(200), 1e-3);
  EXPECT_TRUE(fresh.InWarmup(199));
  EXPECT_FALSE(fresh.InWarmup(200));
  // An exact resume is the same curve: no re-warmup.
  LrSchedule exact{1e-3, 200, 761, 0};
  for (int64_t s = 761; s < 1000; ++s) EXPECT_EQ(exact.At(s), fresh.At(s));
  EXPECT_FALSE(exact.InWarmup(761));
  LrSchedule weights_only{1e-3, 200, 761, 50};
  EXPECT_TRUE(weights_only.InWarmup(761));
  EXPECT_EQ(weights_only.WarmupUntil(), 810);
  EXPECT_FALSE(weights_only.InWarmup(810));
  EXPECT_EQ(WarmupConstant(5, 0), 1.0);
}

}  // namespace
}  // namespace baton
