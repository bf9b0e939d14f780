// The store's series core and the step row's field table: every series key's name parses back
// to it and has its own rollup slot; the one value rule answers both paths' cases (skipped
// steps, padding, expected LR); and every field the trainer's step event carries reaches the
// store's row unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "orchestrator/store/series_rollup_node.h"
#include "orchestrator/store/series_values.h"
#include "orchestrator/store/step_event_fields.h"
#include "tests/unit/vocabulary_checks.h"

namespace baton {
namespace {

TEST(SeriesValues, EveryKeyHasOneNameAndOneSlot) {
  std::set<int> slots;
  std::set<std::string> names;
  for (SeriesKey k : SeriesKeys()) {
    EXPECT_TRUE(names.insert(Name(k)).second) << Name(k);
    const int slot = RollupSlot(k);
    if (slot < 0) continue;
    EXPECT_GE(slot, 1);  // slot 0 is the node's row count
    EXPECT_LT(slot, kRollupKeys);
    EXPECT_TRUE(slots.insert(slot).second) << Name(k);
  }
  EXPECT_EQ(SeriesKeys().size(), 10u);
  EXPECT_EQ(slots.size(), size_t(kRollupKeys - 1));  // every stored slot is one key's
  EXPECT_EQ(RollupSlot(SeriesKey::kExpectedLr), -1);
  test::ExpectEveryWordParsesBack<SeriesKey>("series key");
  EXPECT_FALSE(Find<SeriesKey>("secret"));
  EXPECT_EQ(Names<SeriesKey>().rfind("lr, expected_lr, loss", 0), 0u);
}

TEST(SeriesValues, OneRuleForSkippedStepsPaddingAndTheExpectedLr) {
  SeriesRow r;
  r.step = 9;
  r.lr = 0.5;
  r.loss = 2.0;
  r.grad_norm = 1.5;
  r.tokens = 30;
  r.padded_tokens = 10;
  ExpectedSchedule schedule;
  EXPECT_EQ(SeriesValue(SeriesKey::kLoss, r, schedule), 2.0);
  EXPECT_EQ(SeriesValue(SeriesKey::kPadding, r, schedule), 0.25);
  EXPECT_EQ(SeriesValue(SeriesKey::kTokens, r, schedule), 30.0);
  EXPECT_TRUE(std::isnan(SeriesValue(SeriesKey::kExpectedLr, r, schedule)));  // unknown schedule
  schedule.known = true;
  schedule.base_lr = 1.0;
  schedule.warmup_steps = 20;
  EXPECT_EQ(SeriesValue(SeriesKey::kExpectedLr, r, schedule), schedule.At(9));
  r.nonfinite = true;  // a skipped step has no loss or gradient-norm point, but keeps its lr
  EXPECT_TRUE(std::isnan(SeriesValue(SeriesKey::kLoss, r, schedule)));
  EXPECT_TRUE(std::isnan(SeriesValue(SeriesKey::kGradNorm, r, schedule)));
  EXPECT_EQ(SeriesValue(SeriesKey::kLr, r, schedule), 0.5);
  r.tokens = r.padded_tokens = 0;
  EXPECT_TRUE(std::isnan(SeriesValue(SeriesKey::kPadding, r, schedule)));
}

TEST(SeriesValues, ANodeOfOneRowHoldsTheRulesValues) {
  SeriesRow r;
  r.step = 3;
  r.lr = 0.25;
  r.loss = 1.0;
  r.tokens = 8;
  r.padded_tokens = 8;
  const RollupNode n = NodeOfRow(r);
  EXPECT_EQ(n.rows, 1);
  EXPECT_EQ(n.row().count, 1);
  for (SeriesKey k : SeriesKeys()) {
    const int slot = RollupSlot(k);
    if (slot < 0) continue;
    const double v = SeriesValue(k, r, ExpectedSchedule{});
    EXPECT_EQ(n.key[slot].count, std::isnan(v) ? 0 : 1) << Name(k);
    if (!std::isnan(v)) {
      EXPECT_EQ(n.key[slot].first.value, v) << Name(k);
    }
  }
}

TEST(StepEventFields, EveryEventFieldReachesTheRow) {
  StepEvent e;
  e.step = 41;
  e.lr = 1.25;
  e.loss = 2.5;
  e.loss_video = 3.5;
  e.loss_action = 4.5;
  e.grad_norm = 5.5;
  e.tokens = 6;
  e.padded_tokens = 7;
  e.samples = 8;
  e.valid_frames = 9;
  e.padded_frames = 10;
  e.step_time_s = 11.5;
  e.tokens_per_s = 12.5;
  e.in_warmup = true;
  e.epoch = 13;
  e.nonfinite = true;
  e.nonfinite_episodes = {"ep_1", "ep_2"};
  const StepRecord r = StepRecordOf(e, /*run_id=*/3, /*attempt_id=*/4, /*time=*/100.5);
  EXPECT_EQ(r.run_id, 3);
  EXPECT_EQ(r.attempt_id, 4);
  EXPECT_EQ(r.step, 41);
  EXPECT_EQ(r.time, 100.5);
  int fields = 0;
  ForEachStepEventField([&](auto event_field, auto record_field) {
    EXPECT_EQ(e.*event_field, r.*record_field) << "field " << fields;
    ++fields;
  });
  EXPECT_EQ(fields, 16);
  // Independently of the table: each row field holds what the event said.
  EXPECT_EQ(r.lr, 1.25);
  EXPECT_EQ(r.loss, 2.5);
  EXPECT_EQ(r.loss_video, 3.5);
  EXPECT_EQ(r.loss_action, 4.5);
  EXPECT_EQ(r.grad_norm, 5.5);
  EXPECT_EQ(r.tokens, 6);
  EXPECT_EQ(r.padded_tokens, 7);
  EXPECT_EQ(r.samples, 8);
  EXPECT_EQ(r.valid_frames, 9);
  EXPECT_EQ(r.padded_frames, 10);
  EXPECT_EQ(r.step_time_s, 11.5);
  EXPECT_EQ(r.tokens_per_s, 12.5);
  EXPECT_TRUE(r.in_warmup);
  EXPECT_EQ(r.epoch, 13);
  EXPECT_TRUE(r.nonfinite);
  EXPECT_EQ(r.nonfinite_episodes, (std::vector<std::string>{"ep_1", "ep_2"}));
  EXPECT_FALSE(r.superseded);  // the store's to set
}

}  // namespace
}  // namespace baton
