// Ingest of the trainer's own records: non-finite steps keep null losses and their episode
// ids, and an attempt's end keeps the trainer's words (its message, cut at a character
// boundary; diverged and crashed attempts say what they can).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "orchestrator/ingest/event_ingester.h"
#include "schema/run_folder.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::EndLine;
using test::MakeRun;
using test::OpenStore;
using test::StartLine;
using test::StepLine;
using test::TempDir;

// A trainer record as one events line (the trainer writes NaN and Inf as null).
std::string TrainerLine(const char* type, nlohmann::json rec) {
  rec["type"] = type;
  rec["time"] = 1.5;
  rec["source"] = "trainer";
  return rec.dump() + "\n";
}

TEST(Ingest, NonfiniteStepsKeepNullLossesAndTheirEpisodes) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  const double inf = std::numeric_limits<double>::infinity();
  std::string text = StartLine("fresh", 0) + StepLine(0, 2.0);
  // Skipped: every loss and the norm NaN/Inf (the writer turns both into null).
  text += TrainerLine("step", {{"step", 1},
                               {"lr", 1e-3},
                               {"loss", std::nan("")},
                               {"loss_video", inf},
                               {"loss_action", nullptr},
                               {"grad_norm", -inf},
                               {"tokens", 10},
                               {"nonfinite", true},
                               {"nonfinite_episodes", {"ep_000003", "ep_000007", 12, nullptr}},
                               {"consecutive_nonfinite", 1}});
  // Skipped although the loss is finite: only the gradient norm overflowed.
  text += TrainerLine("step", {{"step", 2},
                               {"lr", 1e-3},
                               {"loss", 7.5},
                               {"grad_norm", nullptr},
                               {"nonfinite", true},
                               {"nonfinite_episodes", {"ep_000011"}},
                               {"consecutive_nonfinite", 2}});
  // Applied with an explicit false; then garbage in numeric fields of an otherwise good record.
  text += TrainerLine("step", {{"step", 3}, {"lr", 1e-3}, {"loss", 1.5}, {"nonfinite", false}});
  text += TrainerLine("step", {{"step", 4}, {"lr", "fast"}, {"loss", {1}}, {"tokens", 1e300}});
  // Not usable as steps (counted as bad lines, never a crash): a step index that does not fit,
  // and a number JSON cannot carry.
  text += TrainerLine("step", {{"step", 1e300}, {"loss", 1.0}});
  text += TrainerLine("step", {{"step", 18446744073709551615ull}, {"loss", 1.0}});
  text += "{\"type\":\"step\",\"time\":1,\"source\":\"trainer\",\"step\":5,\"loss\":NaN}\n";
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0), text);
  IngestStats stats = IngestRun(*store, run).value();
  EXPECT_EQ(stats.steps, 5);
  EXPECT_EQ(stats.bad_lines, 3);

  std::vector<StepRecord> steps = store->ListSteps(run.id).value();
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_FALSE(steps[0].nonfinite);
  const StepRecord& s1 = steps[1];
  EXPECT_TRUE(s1.nonfinite);
  EXPECT_TRUE(std::isnan(s1.loss));
  EXPECT_TRUE(std::isnan(s1.loss_video));
  EXPECT_TRUE(std::isnan(s1.loss_action));
  EXPECT_TRUE(std::isnan(s1.grad_norm));
  EXPECT_DOUBLE_EQ(s1.lr, 1e-3);  // the LR and token fields are there as usual
  EXPECT_EQ(s1.tokens, 10);
  EXPECT_EQ(s1.nonfinite_episodes, (std::vector<std::string>{"ep_000003", "ep_000007", "12"}));
  EXPECT_TRUE(steps[2].nonfinite);
  EXPECT_DOUBLE_EQ(steps[2].loss, 7.5);
  EXPECT_TRUE(std::isnan(steps[2].grad_norm));
  EXPECT_FALSE(steps[3].nonfinite);
  EXPECT_TRUE(steps[3].nonfinite_episodes.empty());
  EXPECT_TRUE(std::isnan(steps[4].lr));
  EXPECT_TRUE(std::isnan(steps[4].loss));
  EXPECT_EQ(steps[4].tokens, 0);
  EXPECT_EQ(store->CountNonfiniteSteps(run.id).value().effective, 2);
  // Every row stored as NULL, none as NaN: the values read back are "no value", never a number.
  for (const StepRecord& s : steps) {
    EXPECT_FALSE(std::isinf(s.loss) || std::isinf(s.loss_video) || std::isinf(s.grad_norm));
  }
}

// What a trainer that fails writes (docs/events.md): segment_end with reason error, its exit
// code and message; another rank's error after it; then the launcher's attempt_end.
TEST(Ingest, ErrorSegmentEndKeepsTheTrainersMessage) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  const std::string message =
      "data/episodes/ep_000003.safetensors: tensor latents holds 1 NaN/Inf value(s) (first at "
      "index 17) \"<img src=x onerror=alert(1)>\" é";
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0),
         StartLine("fresh", 0) + StepLine(0) + StepLine(1) +
             TrainerLine("segment_end", {{"step", 2},
                                         {"reason", "error"},
                                         {"signal", nullptr},
                                         {"exit_code", 65},
                                         {"rank", 0},
                                         {"message", message}}) +
             TrainerLine("segment_end", {{"step", nullptr},
                                         {"reason", "error"},
                                         {"exit_code", 70},
                                         {"rank", 1},
                                         {"message", "gloo: connection reset by peer"}}) +
             EndLine("fail", "data_error", 65));
  ASSERT_TRUE(IngestRun(*store, run).ok());
  const AttemptRecord a = store->ListAttempts(run.id).value().at(0);
  EXPECT_EQ(a.trainer_end_reason, "error");
  EXPECT_EQ(a.trainer_message, message);  // verbatim; the first error is the cause
  EXPECT_EQ(a.trainer_exit_code, 65);
  EXPECT_EQ(a.exit_code, 65);
  EXPECT_EQ(a.end_reason, "data_error");
  const RunRecord r = store->GetRun(run.id).value();
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_EQ(r.reason, "data_error at step 2 (exit code 65): " + message);
}

TEST(Ingest, DivergedAndCrashedAttemptsSayWhatTheyCan) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  // 7.0 crashes: no segment_end, only the launcher's attempt_end.
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0),
         StartLine("fresh", 0) + StepLine(0) + EndLine("requeue", "crashed", 139));
  // 7.1 diverges.
  const std::string why =
      "3 consecutive steps with a NaN/Inf loss or gradient norm (train.max_nonfinite_steps 3)";
  std::string second = StartLine("fresh", 0);
  for (int s = 0; s < 3; ++s) {
    second += TrainerLine("step", {{"step", s},
                                   {"loss", nullptr},
                                   {"nonfinite", true},
                                   {"nonfinite_episodes", {"ep_" + std::to_string(s)}},
                                   {"consecutive_nonfinite", s + 1}});
  }
  second += TrainerLine("segment_end", {{"step", 3},
                                        {"reason", "diverged"},
                                        {"signal", nullptr},
                                        {"exit_code", 79},
                                        {"message", why}}) +
            EndLine("fail", "diverged", 79);
  Append(RunFolder{tmp / "run"}.EventsFile("7", 1), second);
  ASSERT_TRUE(IngestRun(*store, run).ok());
  const std::vector<AttemptRecord> attempts = store->ListAttempts(run.id).value();
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].trainer_end_reason, "");
  EXPECT_EQ(attempts[0].trainer_message, "");
  EXPECT_FALSE(attempts[0].trainer_exit_code.has_value());
  EXPECT_EQ(attempts[0].exit_code, 139);
  EXPECT_EQ(attempts[1].trainer_end_reason, "diverged");
  EXPECT_EQ(attempts[1].trainer_message, why);
  EXPECT_EQ(attempts[1].trainer_exit_code, 79);
  EXPECT_EQ(attempts[1].end_reason, "diverged");
  const RunRecord r = store->GetRun(run.id).value();
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_NE(r.reason.find("diverged"), std::string::npos);
  EXPECT_NE(r.reason.find(why), std::string::npos);
  const NonfiniteCounts counts = store->CountNonfiniteSteps(run.id).value();
  EXPECT_EQ(counts.effective, 3);
  EXPECT_EQ(counts.superseded, 0);
  // The crashed attempt's step 0 was re-done by the second attempt.
  EXPECT_EQ(store->CountSteps(run.id, true).value() - store->CountSteps(run.id, false).value(), 1);
}

TEST(Ingest, AnOverlongMessageIsCutAtACharacterBoundary) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  std::string huge;
  while (huge.size() < 3 * kMaxTrainerMessageBytes) huge += "é";  // 2 bytes each
  huge = "x" + huge;  // so the limit falls inside a character
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0),
         StartLine("fresh", 0) +
             TrainerLine("segment_end",
                         {{"step", 0}, {"reason", "error"}, {"exit_code", 70}, {"message", huge}}));
  ASSERT_TRUE(IngestRun(*store, run).ok());
  const std::string kept = store->ListAttempts(run.id).value().at(0).trainer_message;
  EXPECT_LE(kept.size(), kMaxTrainerMessageBytes + 3);
  EXPECT_GT(kept.size(), kMaxTrainerMessageBytes - 4);
  EXPECT_EQ(kept.substr(kept.size() - 3), "…");
  // Still valid UTF-8: the JSON writers the CLI and the API use would throw otherwise.
  EXPECT_NO_THROW((void)nlohmann::json(kept).dump());
}

}  // namespace
}  // namespace baton
