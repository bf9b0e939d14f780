// The eval: split of a dataset: the seeded draw, the training index without the held-out
// episodes, the fingerprint that covers them, and the bad sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/common/temp_dir.h"
#include "trainer/data/synth_dataset.h"
#include "trainer/eval/eval_set.h"

namespace baton {
namespace {

class EvalSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opt_.out = tmp_ / "ds";
    opt_.episodes = 20;
    opt_.seed = 3;
    opt_.min_frames = 5;
    opt_.max_frames = 9;
    ASSERT_TRUE(WriteSynthDataset(opt_).ok());
    auto r = LoadDatasetIndex(opt_.out);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    data_ = r.value();
  }
  test::TempDir tmp_;
  SynthOptions opt_;
  DatasetIndex data_;
};

TEST_F(EvalSetTest, TheSeededDrawIsFixedSortedAndDependsOnTheSeed) {
  const std::vector<int64_t> a = DrawHeldOut(20, 5, 7);
  EXPECT_EQ(a, DrawHeldOut(20, 5, 7));
  EXPECT_EQ(a.size(), 5u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 5u);
  EXPECT_NE(a, DrawHeldOut(20, 5, 8));
  // A larger fraction of the same seed holds out more: the draw is one shuffle, cut.
  const std::vector<int64_t> b = DrawHeldOut(20, 19, 7);
  for (int64_t i : a) EXPECT_TRUE(std::count(b.begin(), b.end(), i)) << i;
}

TEST_F(EvalSetTest, HeldOutEpisodesLeaveTheTrainingIndexAndChangeItsFingerprint) {
  EvalSection eval;
  eval.fraction = 0.25;
  eval.seed = 4;
  auto r = SplitEvalSet(data_, eval);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const EvalSet& set = r.value();
  ASSERT_EQ(set.eval->episodes.size(), 5u);
  ASSERT_EQ(set.train->episodes.size(), 15u);
  EXPECT_EQ(set.eval_keys, DrawHeldOut(20, 5, 4));
  std::set<std::string> train_ids;
  for (size_t i = 0; i < set.train->episodes.size(); ++i) {
    train_ids.insert(set.train->episodes[i].id);
    EXPECT_EQ(set.train->episodes[i].id, data_.episodes[size_t(set.train_to_data[i])].id);
  }
  for (int64_t k : set.eval_keys) EXPECT_EQ(train_ids.count(data_.episodes[size_t(k)].id), 0u);
  EXPECT_NE(set.train->fingerprint, data_.fingerprint);
  eval.seed = 5;
  EXPECT_NE(SplitEvalSet(data_, eval).value().train->fingerprint, set.train->fingerprint);
  // The same episodes as a list: the same training index.
  EvalSection listed;
  listed.episodes = set.eval_keys;
  EXPECT_EQ(SplitEvalSet(data_, listed).value().train->fingerprint, set.train->fingerprint);
  // No eval: the dataset as it is.
  auto none = SplitEvalSet(data_, EvalSection{});
  EXPECT_FALSE(none.value().enabled());
  EXPECT_EQ(none.value().train->fingerprint, data_.fingerprint);
}

TEST_F(EvalSetTest, BadSetsAreConfigErrorsNamingTheEpisodes) {
  EvalSection outside;
  outside.episodes = {2, 20, 31};
  auto r = SplitEvalSet(data_, outside);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kConfig);
  EXPECT_NE(r.status().message().find("episode(s) 20, 31 are not in data.path"), std::string::npos)
      << r.status().message();
  EvalSection tiny;
  tiny.fraction = 0.02;
  EXPECT_EQ(SplitEvalSet(data_, tiny).status().code(), Code::kConfig);
  EvalSection all;
  for (int64_t i = 0; i < 20; ++i) all.episodes.push_back(i);
  EXPECT_NE(SplitEvalSet(data_, all).status().message().find("leaves none to train on"),
            std::string::npos);
  EvalSection same;
  same.data = opt_.out;  // every episode a training episode
  auto s = SplitEvalSet(data_, same);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kConfig);
  EXPECT_NE(s.status().message().find("20 eval episode(s)"), std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace baton
