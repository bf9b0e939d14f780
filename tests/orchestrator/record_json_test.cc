// The records' JSON, shared by the CLI's --json and the web API: keys, and null for every value
// that is absent or not finite.
#include "orchestrator/store/record_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

namespace baton {
namespace {

using nlohmann::json;

std::set<std::string> Keys(const json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(RecordJson, NonFiniteAndAbsentValuesAreNull) {
  EXPECT_TRUE(JsonNumber(std::nan("")).is_null());
  EXPECT_TRUE(JsonNumber(kInf).is_null());
  EXPECT_TRUE(JsonNumber(-kInf).is_null());
  EXPECT_TRUE(JsonNumber(std::optional<double>(kInf)).is_null());
  EXPECT_TRUE(JsonNumber(std::optional<double>()).is_null());
  EXPECT_TRUE(JsonNumber(std::optional<int64_t>()).is_null());
  EXPECT_TRUE(JsonTextOrNull("").is_null());
  EXPECT_EQ(JsonNumber(1.5), json(1.5));
  EXPECT_EQ(JsonNumber(std::optional<int64_t>(7)), json(7));
  EXPECT_EQ(JsonTextOrNull("x"), json("x"));
}

TEST(RecordJson, RunAttemptAndCheckpointKeys) {
  RunRecord r;
  r.id = 3;
  r.name = "demo";
  r.config = "run: {}";
  EXPECT_EQ(Keys(RunJson(r)),
            (std::set<std::string>{"id", "name", "status", "reason", "run_dir", "config_source",
                                   "partition", "target_steps", "max_restarts", "max_failures",
                                   "job_id", "created_at", "updated_at", "owner", "cluster"}));
  EXPECT_TRUE(RunJson(r)["job_id"].is_null());  // '' before sbatch answered
  EXPECT_EQ(RunJson(r)["status"], "PENDING");

  AttemptRecord a;
  a.job_id = "7";
  a.step0 = 40;
  const json aj = AttemptJson(a);
  EXPECT_EQ(Keys(aj), (std::set<std::string>{"job_id",
                                             "cluster",
                                             "restart_count",
                                             "nodes",
                                             "started_at",
                                             "ended_at",
                                             "slurm_state",
                                             "exit_code",
                                             "action",
                                             "end_reason",
                                             "trainer_end_reason",
                                             "trainer_message",
                                             "trainer_exit_code",
                                             "resume_mode",
                                             "checkpoint",
                                             "step0",
                                             "last_step",
                                             "resume_warmup_steps",
                                             "warmup_until",
                                             "world_size",
                                             "trainer_signal",
                                             "slurm_reason",
                                             "slurm_exit_code",
                                             "init_from",
                                             "hold_released_at",
                                             "hold_release_error",
                                             "signal",
                                             "log",
                                             "in_job_seq",
                                             "restart_cause",
                                             "hang_last_heartbeat_at",
                                             "hang_detected_at",
                                             "hang_stale_ranks",
                                             "hang_stack"}));
  EXPECT_EQ(aj["step0"], 40);
  EXPECT_TRUE(aj["init_from"].is_null());  // '' = the weights came from no upstream folder
  EXPECT_TRUE(aj["last_step"].is_null());
  EXPECT_TRUE(aj["trainer_message"].is_null());
  EXPECT_TRUE(aj["signal"].is_null());
  EXPECT_EQ(aj["log"], "logs/7.out");

  CheckpointRecord c;
  c.step = 100;
  c.seconds = kInf;
  const json cj = CheckpointJson(c);
  EXPECT_EQ(Keys(cj),
            (std::set<std::string>{"step", "path", "bytes", "seconds", "reason", "valid", "time"}));
  EXPECT_TRUE(cj["seconds"].is_null());
}

TEST(RecordJson, SkippedStepsCarryNullsNotNaN) {
  StepRecord s;
  s.step = 15;
  s.loss = std::nan("");
  s.grad_norm = kInf;
  s.lr = 1e-3;
  s.nonfinite = true;
  s.nonfinite_episodes = {"ep_1", "ep_2"};
  const json j = NonfiniteStepJson(s, /*attempt=*/2);
  EXPECT_EQ(j["attempt"], 2);
  EXPECT_TRUE(j["loss"].is_null());
  EXPECT_TRUE(j["grad_norm"].is_null());
  EXPECT_EQ(j["lr"], 1e-3);
  EXPECT_EQ(j["episodes"], json({"ep_1", "ep_2"}));
  // Strict JSON: a parser that refuses NaN and Infinity tokens reads the text back.
  EXPECT_FALSE(json::parse(DumpJson(j), nullptr, /*allow_exceptions=*/false).is_discarded());
  EXPECT_EQ(Keys(WithoutKeys(j, {"loss_video", "loss_action", "time"})),
            (std::set<std::string>{"step", "attempt", "loss", "grad_norm", "lr", "episodes"}));
}

TEST(RecordJson, InvalidUtf8IsReplacedNotThrown) {
  RunRecord r;
  r.name = std::string("bad\xff name");
  const std::string text = DumpJson(RunJson(r), 2);
  EXPECT_NE(text.find("bad\xEF\xBF\xBD name"), std::string::npos) << text;
}

}  // namespace
}  // namespace baton
