// The eval: section and checkpoint.keep_best: what each source reads as, the round trip through
// ToYaml, and each refusal naming its key (docs/eval.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "schema/eval_results.h"
#include "tests/unit/run_config_fixture.h"

namespace baton::test {
namespace {

using EvalConfigTest = RunConfigTest;

TEST_F(EvalConfigTest, NoSectionMeansNoEvalAndToYamlWritesNone) {
  auto c = Parse(kMinimal);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->eval.enabled());
  EXPECT_EQ(ToYaml(*c).find("eval"), std::string::npos);
  EXPECT_EQ(ToYaml(*c).find("keep_best"), std::string::npos);
}

TEST_F(EvalConfigTest, AFractionWithKeepBestRoundTrips) {
  auto c = Parse(std::string(kMinimal) +
                 "eval: {fraction: 0.25, seed: 7, every: 2, mode: job, time: '00:10:00'}\n"
                 "checkpoint: {keep_best: {metric: eval.loss_video, k: 2}}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->eval.fraction, 0.25);
  EXPECT_EQ(c->eval.seed, 7);
  EXPECT_EQ(c->eval.every, 2);
  EXPECT_EQ(c->eval.mode, EvalMode::kJob);
  EXPECT_EQ(c->checkpoint.keep_best_metric, "eval.loss_video");
  EXPECT_EQ(c->checkpoint.keep_best_k, 2);
  auto again = Parse(ToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(ToYaml(*again), ToYaml(*c));
  EXPECT_EQ(again->checkpoint.keep_best_k, 2);
  EXPECT_EQ(again->eval.mode, EvalMode::kJob);
}

TEST_F(EvalConfigTest, AnEpisodeListRoundTrips) {
  auto c = Parse(std::string(kMinimal) + "eval: {episodes: [3, 1, 4]}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->eval.episodes, (std::vector<int64_t>{3, 1, 4}));
  auto again = Parse(ToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->eval.episodes, c->eval.episodes);
}

TEST_F(EvalConfigTest, EachBadEvalSetIsRefusedNamingItsKey) {
  const std::string base = kMinimal;
  EXPECT_NE(Error(base + "eval: {episodes: []}\n").find("eval.episodes: the eval set is empty"),
            std::string::npos);
  EXPECT_NE(Error(base + "eval: {every: 2}\n").find("eval: the eval set is empty"),
            std::string::npos);
  EXPECT_NE(Error(base + "eval: {episodes: [1, 1]}\n").find("episode 1 is listed twice"),
            std::string::npos);
  EXPECT_NE(Error(base + "eval: {fraction: 1}\n").find("eval.fraction: must be below 1"),
            std::string::npos);
  EXPECT_NE(Error(base + "eval: {fraction: 0.1, episodes: [2]}\n").find("give one eval set"),
            std::string::npos);
  EXPECT_NE(Error(base + "eval: {data: data}\n").find("eval.data: is data.path itself"),
            std::string::npos);
  EXPECT_NE(Error(base + "eval: {episodes: [1], mode: later}\n").find("eval.mode"),
            std::string::npos);
}

TEST_F(EvalConfigTest, EachBadKeepBestIsRefusedNamingItsKey) {
  const std::string base = std::string(kMinimal) + "eval: {fraction: 0.1}\n";
  EXPECT_NE(Error(base + "checkpoint: {keep_best: {metric: eval.loss, k: 0}}\n")
                .find("checkpoint.keep_best.k: must be at least 1"),
            std::string::npos);
  EXPECT_NE(Error(base + "checkpoint: {keep_best: {metric: eval.accuracy, k: 2}}\n")
                .find("no eval produces the metric 'eval.accuracy'"),
            std::string::npos);
  EXPECT_NE(Error(base + "checkpoint: {keep_best: {metric: eval.loss, k: 2, top: 1}}\n")
                .find("checkpoint.keep_best.top: unknown key"),
            std::string::npos);
  EXPECT_NE(Error(std::string(kMinimal) + "checkpoint: {keep_best: {metric: eval.loss, k: 2}}\n")
                .find("no eval: section"),
            std::string::npos);
}

TEST(EvalResultsTest, AWrittenResultReadsBackAndABadFileIsNamedNotFatal) {
  TempDir tmp;
  RunFolder run{tmp.path()};
  EvalEvent e;
  e.step = 40;
  e.checkpoint = run.CheckpointDir(40);
  e.mode = "job";
  e.loss = 0.125;
  e.loss_video = 0.1;
  e.loss_action = 0.025;
  e.episodes = 3;
  ASSERT_TRUE(WriteEvalResult(run, e).ok());
  {
    std::ofstream(run.EvalFile(50)) << "{\"step\": 60}";  // a step its name does not hold
    std::ofstream(run.EvalsDir() + "/step_70.json") << "not json";
  }
  EvalResults r = ReadEvalResults(run);
  ASSERT_EQ(r.by_step.size(), 1u);
  EXPECT_EQ(r.by_step.at(40).loss, 0.125);
  EXPECT_EQ(EvalMetric(r.by_step.at(40), "eval.loss_action"), 0.025);
  EXPECT_TRUE(std::isnan(EvalMetric(r.by_step.at(40), "eval.accuracy")));
  EXPECT_EQ(r.problems.size(), 2u);
}

TEST(EvalResultsTest, EvalTargetsAreEveryKthSaveByStepAndTheLastSave) {
  RunConfig config;
  config.run.steps = 25;
  config.checkpoint.every = 5;
  EXPECT_FALSE(IsEvalTarget(config, 10));  // no eval section
  config.eval.fraction = 0.1;
  config.eval.every = 2;
  std::vector<int64_t> targets;
  for (int64_t step = 1; step <= 25; ++step)
    if (IsEvalTarget(config, step)) targets.push_back(step);
  EXPECT_EQ(targets, (std::vector<int64_t>{10, 20, 25}));
}

}  // namespace
}  // namespace baton::test
