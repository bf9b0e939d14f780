// Keep-best retention (schema/storage_forecast.h RetentionKeeps, schema/keep_best.h) against the
// kept set as docs/eval.md states it, computed here independently: by counting, over every save
// the run ever made, how many evaluated saves rank before each one, instead of sorting what is
// on disk. Also the eval files read from a real run folder, and --best's pick.
#include "schema/keep_best.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "tests/common/temp_dir.h"

namespace baton {
namespace {

struct Policy {
  int64_t keep_last = 2, keep_every = 0, k = 2;
};

// The stated set over the whole history: the newest keep_last saves, the keep_every multiples,
// the targets still without a value, and each evaluated save that fewer than k evaluated saves
// beat (lower value, or equal value and lower step).
std::set<int64_t> Stated(const std::vector<int64_t>& saves, const std::map<int64_t, double>& value,
                         const std::set<int64_t>& awaiting, const Policy& p) {
  std::set<int64_t> kept;
  for (size_t i = 0; i < saves.size(); ++i) {
    const int64_t s = saves[i];
    if (i + size_t(p.keep_last) >= saves.size()) kept.insert(s);
    if (p.keep_every > 0 && s % p.keep_every == 0) kept.insert(s);
    if (awaiting.count(s)) kept.insert(s);
    auto it = value.find(s);
    if (it == value.end()) continue;
    int64_t beaten_by = 0;
    for (const auto& [t, v] : value) beaten_by += v < it->second || (v == it->second && t < s);
    if (beaten_by < p.k) kept.insert(s);
  }
  return kept;
}

// A run saving at every step 1..n, evaluating some saves later than they are written (some
// never): RetentionKeeps after each save ends each time with the stated set.
void Walk(const Policy& p, uint32_t seed, int64_t n) {
  std::mt19937 rng(seed);
  std::vector<int64_t> saves, on_disk;  // on_disk newest first
  std::map<int64_t, double> value;      // the values the eval results hold
  std::set<int64_t> awaiting;           // targets without a value
  for (int64_t s = 1; s <= n; ++s) {
    saves.push_back(s);
    on_disk.insert(on_disk.begin(), s);
    if (s % 2 == 0 || s == n) awaiting.insert(s);  // the targets: every 2nd save and the last
    // Results arrive in any order and late; values repeat so ties happen.
    for (int64_t t : std::set<int64_t>(awaiting)) {
      if (rng() % 3 == 0) {
        value[t] = double(rng() % 5);
        awaiting.erase(t);
      }
    }
    std::vector<RetainedCheckpoint> listed;
    for (int64_t d : on_disk) {
      RetainedCheckpoint c{d, true};
      if (value.count(d)) c.value = value[d];
      c.awaiting_eval = awaiting.count(d) > 0;
      listed.push_back(c);
    }
    const std::vector<bool> keep =
        RetentionKeeps(listed, RetentionRule{p.keep_last, p.keep_every, p.k});
    std::vector<int64_t> next;
    for (size_t i = 0; i < on_disk.size(); ++i) {
      if (keep[i]) next.push_back(on_disk[i]);
    }
    on_disk = next;
    EXPECT_EQ(std::set<int64_t>(on_disk.begin(), on_disk.end()), Stated(saves, value, awaiting, p))
        << "seed " << seed << " after save " << s;
    for (int64_t t : awaiting) {
      EXPECT_TRUE(std::count(on_disk.begin(), on_disk.end(), t)) << "awaiting " << t << " deleted";
    }
  }
}

TEST(KeepBest, RetentionKeepsIsTheStatedSetOverARun) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    Walk({2, 0, 2}, seed, 30);
    Walk({1, 5, 3}, seed, 30);
    Walk({3, 4, 1}, seed, 25);
  }
}

TEST(KeepBest, TiesGoToTheLowerStepAndNaNNeverRanks) {
  const double nan = kNoNumber;
  // Newest first: 50 (newest, kept by keep_last 1), 40 and 20 tie at 1.0, 30 has no value.
  std::vector<RetainedCheckpoint> listed = {{50, true}, {40, true}, {30, true}, {20, true}};
  listed[0].value = 3.0;
  listed[1].value = 1.0;
  listed[2].value = nan;
  listed[3].value = 1.0;
  EXPECT_EQ(RetentionKeeps(listed, RetentionRule{1, 0, 1}),
            (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(RetentionKeeps(listed, RetentionRule{1, 0, 2}),
            (std::vector<bool>{true, true, false, true}));
  // Without keep-best, values and waiting change nothing.
  listed[2].awaiting_eval = true;
  EXPECT_EQ(RetentionKeeps(listed, RetentionRule{1, 0, 0}),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(RetentionKeeps(listed, RetentionRule{1, 0, 1}),
            (std::vector<bool>{true, false, true, true}));
}

RunConfig KeepBestConfig() {
  RunConfig c;
  c.run.steps = 10;
  c.checkpoint.every = 2;
  c.eval.fraction = 0.2;
  c.eval.every = 2;  // targets: steps 4, 8 and the last, 10
  c.checkpoint.keep_best_metric = "eval.loss_video";
  c.checkpoint.keep_best_k = 1;
  return c;
}

EvalEvent Result(int64_t step, double loss_video) {
  EvalEvent e;
  e.step = step;
  e.loss = 100 - double(step);  // ranks the other way: the metric named must be the one used
  e.loss_video = loss_video;
  e.loss_action = 0;
  return e;
}

TEST(KeepBest, EvalFilesOfARunFolder) {
  test::TempDir tmp;
  const RunFolder run{tmp.path()};
  ASSERT_TRUE(WriteEvalResult(run, Result(4, 0.5)).ok());
  ASSERT_TRUE(WriteEvalResult(run, Result(10, kNoNumber)).ok());  // evaluated, no usable value
  std::vector<CheckpointEntry> valid;
  for (int64_t s : {10, 8, 6, 4, 2}) {
    CheckpointEntry e;
    e.step = s;
    e.valid = e.finite = true;
    valid.push_back(e);
  }
  const RunConfig config = KeepBestConfig();
  const std::vector<RetainedCheckpoint> listed =
      RetainedOnDisk(config, run.CheckpointsDir(), valid);
  ASSERT_EQ(listed.size(), 5u);
  EXPECT_FALSE(listed[0].awaiting_eval);  // 10: has a result
  EXPECT_TRUE(std::isnan(listed[0].value));
  EXPECT_TRUE(listed[1].awaiting_eval);   // 8: a target without one
  EXPECT_FALSE(listed[2].awaiting_eval);  // 6: not a target
  EXPECT_EQ(listed[3].value, 0.5);        // 4
  EXPECT_EQ(RetentionKeeps(listed, RetentionRuleOf(config.checkpoint)),
            (std::vector<bool>{true, true, true, true, false}));  // keep_last 3 (default)
  RunConfig off = config;
  off.checkpoint.keep_best_metric.clear();
  for (const RetainedCheckpoint& c : RetainedOnDisk(off, run.CheckpointsDir(), valid)) {
    EXPECT_FALSE(c.awaiting_eval);
    EXPECT_TRUE(std::isnan(c.value));
  }
  EXPECT_EQ(RetentionRuleOf(off.checkpoint).best_k, 0);
}

TEST(KeepBest, BestEvaluatedIsAmongTheStepsGiven) {
  EvalResults r;
  r.by_step[2] = Result(2, 0.3);
  r.by_step[4] = Result(4, 0.3);
  r.by_step[6] = Result(6, 0.1);
  EXPECT_EQ(BestEvaluated({2, 4, 6}, r, "eval.loss_video"), 6);
  EXPECT_EQ(BestEvaluated({2, 4}, r, "eval.loss_video"), 2);  // the tie: the lower step
  EXPECT_EQ(BestEvaluated({2, 4, 6}, r, "eval.loss"), 6);     // loss is 100 - step
  EXPECT_FALSE(BestEvaluated({8}, r, "eval.loss").has_value());
}

TEST(KeepBest, RetainedCountAddsAtMostK) {
  for (int64_t steps : {1, 5, 12, 40}) {
    for (int64_t k : {1, 2, 3}) {
      const int64_t base = RetainedCount(steps, 2, 2, 0);
      const int64_t saves = (steps - 1) / 2 + 1;
      EXPECT_EQ(RetainedCount(steps, 2, 2, 0, k), std::min(saves, base + k));
    }
  }
  // The bound is reached: values rising with the step put the best k at the oldest saves.
  std::vector<RetainedCheckpoint> listed;
  for (int64_t s = 20; s >= 2; s -= 2) {
    RetainedCheckpoint c{s, true};
    c.value = double(s);
    listed.push_back(c);
  }
  const std::vector<bool> keep = RetentionKeeps(listed, RetentionRule{2, 0, 2});
  EXPECT_EQ(std::count(keep.begin(), keep.end(), true), RetainedCount(20, 2, 2, 0, 2));
}

}  // namespace
}  // namespace baton
