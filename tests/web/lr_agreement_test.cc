// The warmup and LR rule shown everywhere agrees with the trainer's, over a grid of (warmup W,
// step0, resume warmup K) and resume modes: the steps the trainer logs in_warmup and the LR it
// logs (schema/lr_schedule.h, what baton-train runs), the range segment_start reports, the CLI's
// WARMUP column and the run page's shaded ranges (AttemptWarmup / BuildTimeline, with the config
// known and with only segment_start's figure), and the expected curve of an uninterrupted run.
#include <gtest/gtest.h>

#include <string>

#include "orchestrator/history/run_timeline.h"
#include "schema/lr_schedule.h"

namespace baton {
namespace {

std::string Yaml(int64_t warmup, int64_t resume_warmup) {
  return "run: {name: g, dir: /nonexistent/run, steps: 200, seed: 1}\n"
         "data: {path: /nonexistent/data}\n"
         "optim: {lr: 3.0e-4, warmup_steps: " +
         std::to_string(warmup) + ", resume_warmup_steps: " + std::to_string(resume_warmup) + "}\n";
}

TEST(LrAgreement, TrainerCliApiAndExpectedCurveAgreeOverAGrid) {
  int cases = 0;
  for (int64_t w : {0, 1, 5, 20}) {
    for (int64_t k : {0, 1, 4, 10}) {
      const ExpectedSchedule schedule = ScheduleFromConfig(Yaml(w, k));
      ASSERT_TRUE(schedule.known) << "a frozen run.yaml whose dataset is gone must still parse";
      for (int64_t step0 : {0, 3, 5, 10, 25}) {
        for (const std::string mode : {"exact", "weights_only"}) {
          if (step0 == 0 && mode == "weights_only") continue;
          const int64_t seg_k = mode == "weights_only" ? k : 0;
          // What the trainer runs and logs for this segment.
          const LrSchedule trainer{3.0e-4, w, step0, seg_k};
          for (int64_t reached : {step0 - 1, step0, step0 + 2, step0 + 40}) {
            AttemptRecord a;
            a.id = 1;
            a.resume_mode = step0 == 0 ? "fresh" : mode;
            a.step0 = step0;
            a.resume_warmup_steps = seg_k;
            if (reached >= step0) a.last_step = reached + 1;  // steps finished
            // The steps the trainer marks in_warmup, among those it finished.
            int64_t first = -1, end = -1;
            for (int64_t s = step0; s <= reached; ++s) {
              if (trainer.InWarmup(s)) {
                if (first < 0) first = s;
                end = s + 1;
              }
            }
            const std::string where = "W=" + std::to_string(w) + " K=" + std::to_string(k) +
                                      " step0=" + std::to_string(step0) + " " + mode +
                                      " reached=" + std::to_string(reached);
            const std::optional<int64_t> reached_index =
                a.last_step ? std::optional<int64_t>(*a.last_step - 1) : std::nullopt;
            // The CLI and the API from the frozen config.
            const WarmupRange from_config = AttemptWarmup(a, schedule, reached_index);
            // ... and from segment_start's warmup_until alone (config unreadable).
            a.warmup_until = trainer.WarmupUntil();
            const WarmupRange from_event = AttemptWarmup(a, ExpectedSchedule{}, reached_index);
            const std::vector<TimelineSegment> timeline = BuildTimeline({a}, {}, schedule);
            ASSERT_EQ(timeline.size(), 1u);
            if (first < 0) {
              if (reached >= step0) {
                EXPECT_TRUE(from_config.empty()) << where;
                EXPECT_TRUE(from_event.empty()) << where;
                EXPECT_FALSE(timeline[0].warmup_from) << where;
              }
              continue;
            }
            EXPECT_EQ(from_config.from, first) << where;
            EXPECT_EQ(from_config.until, end) << where;
            EXPECT_EQ(from_event.from, first) << where;
            EXPECT_EQ(from_event.until, end) << where;
            ASSERT_TRUE(timeline[0].warmup_from) << where;
            EXPECT_EQ(*timeline[0].warmup_from, first) << where;
            EXPECT_EQ(*timeline[0].warmup_until, end) << where;
            ++cases;
          }
          // The expected curve is the uninterrupted run's LR; an exact segment follows it.
          for (int64_t s = 0; s < 60; ++s) {
            EXPECT_EQ(schedule.At(s), (LrSchedule{3.0e-4, w, 0, 0}.At(s))) << s;
            if (seg_k == 0) {
              EXPECT_EQ(schedule.At(s), trainer.At(s)) << s;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 100);
}

// The first full-LR step of a weights-only resume: min(1, (s+1)/K) reaches 1 at s = K-1, so the
// ramp covers K-1 steps past step0 and the initial warmup may end later.
TEST(LrAgreement, WarmupUntilIsTheFirstFullLrStep) {
  EXPECT_EQ((LrSchedule{1.0, 0, 100, 4}.WarmupUntil()), 103);
  EXPECT_EQ((LrSchedule{1.0, 0, 100, 4}.At(103)), 1.0);
  EXPECT_LT((LrSchedule{1.0, 0, 100, 4}.At(102)), 1.0);
  EXPECT_EQ((LrSchedule{1.0, 200, 100, 4}.WarmupUntil()), 200);
  EXPECT_EQ((LrSchedule{1.0, 20, 0, 0}.WarmupUntil()), 20);
}

}  // namespace
}  // namespace baton
