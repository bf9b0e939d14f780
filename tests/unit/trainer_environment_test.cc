// The trainer's environment, read once (trainer/train/trainer_environment.h): every variable
// lands in its field as written, an unset one gives the field's default, and a hook that is not
// a number counts as unset.
#include "trainer/train/trainer_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace baton {
namespace {

const std::vector<const char*> kVariables = {"SLURM_JOB_ID",
                                             "SLURM_RESTART_COUNT",
                                             "SLURMD_NODENAME",
                                             "BATON_GRACE_S",
                                             "BATON_EPISODE_LOG",
                                             "BATON_TEST_BLOCK_SLEEP_MS",
                                             "BATON_TEST_SIGNAL_AT",
                                             "BATON_TEST_SAVE_SLEEP_S",
                                             "BATON_TEST_FIRST_STEP_SLEEP_S",
                                             "BATON_TEST_CRASH_AT_STEP",
                                             "BATON_TEST_CRASH_RANK",
                                             "BATON_TEST_WIDEN_AFTER_BACKWARD",
                                             "BATON_TEST_CKPT_WRITE_DELAY_MS"};

// Sets `values` for the test's length, and unsets every other variable the struct reads.
class Environment {
 public:
  explicit Environment(std::vector<std::pair<const char*, const char*>> values) {
    for (const char* name : kVariables) ::unsetenv(name);
    for (const auto& [name, value] : values) ::setenv(name, value, 1);
  }
  ~Environment() {
    for (const char* name : kVariables) ::unsetenv(name);
  }
};

TEST(TrainerEnvironment, EveryVariableLandsInItsField) {
  Environment env({{"SLURM_JOB_ID", "4711"},
                   {"SLURM_RESTART_COUNT", "3"},
                   {"SLURMD_NODENAME", "gpu07"},
                   {"BATON_GRACE_S", "soon"},
                   {"BATON_EPISODE_LOG", "/tmp/episodes"},
                   {"BATON_TEST_BLOCK_SLEEP_MS", "25"},
                   {"BATON_TEST_SIGNAL_AT", "backward:2:1@1"},
                   {"BATON_TEST_SAVE_SLEEP_S", "1.5"},
                   {"BATON_TEST_FIRST_STEP_SLEEP_S", "0.25"},
                   {"BATON_TEST_CRASH_AT_STEP", "9"},
                   {"BATON_TEST_CRASH_RANK", "1"},
                   {"BATON_TEST_WIDEN_AFTER_BACKWARD", "1"},
                   {"BATON_TEST_CKPT_WRITE_DELAY_MS", "x"}});
  const TrainerEnvironment e = TrainerEnvironmentFromProcess();
  EXPECT_EQ(e.job_id, "4711");
  EXPECT_EQ(e.JobOrLocal(), "4711");
  EXPECT_EQ(e.restart_count, 3);
  EXPECT_EQ(e.node_name, "gpu07");
  EXPECT_EQ(e.grace_s, "soon");  // kept as written: the saver checks it when it is made
  EXPECT_EQ(e.episode_log, "/tmp/episodes");
  EXPECT_EQ(e.stepper.block_sleep_us, 25000);
  EXPECT_EQ(e.stepper.signal_at, "backward:2:1@1");
  EXPECT_EQ(e.heartbeat.save_sleep_s, 1.5);
  EXPECT_EQ(e.heartbeat.first_step_sleep_s, 0.25);
  EXPECT_EQ(e.heartbeat.crash_at_step, 9);
  EXPECT_EQ(e.heartbeat.crash_rank, 1);
  EXPECT_TRUE(e.widen_after_backward);
  EXPECT_EQ(e.ckpt_write_delay_ms, "x");
}

TEST(TrainerEnvironment, OutsideSlurmEachFieldHasItsDefault) {
  Environment env({});
  const TrainerEnvironment e = TrainerEnvironmentFromProcess();
  EXPECT_EQ(e.job_id, "");
  EXPECT_EQ(e.JobOrLocal(), "local");
  EXPECT_EQ(e.restart_count, 0);
  EXPECT_EQ(e.node_name, "");
  EXPECT_EQ(e.grace_s, "");
  EXPECT_EQ(e.stepper.block_sleep_us, 0);
  EXPECT_EQ(e.stepper.signal_at, "");
  EXPECT_EQ(e.heartbeat.save_sleep_s, 0);
  EXPECT_EQ(e.heartbeat.crash_at_step, -1);
  EXPECT_EQ(e.heartbeat.crash_rank, 0);
  EXPECT_FALSE(e.widen_after_backward);
}

TEST(TrainerEnvironment, AnEmptyJobIsLocalAndAHookThatIsNoNumberIsUnset) {
  Environment env({{"SLURM_JOB_ID", ""},
                   {"BATON_TEST_CRASH_AT_STEP", "soon"},
                   {"BATON_TEST_SAVE_SLEEP_S", "2s"},
                   {"BATON_TEST_WIDEN_AFTER_BACKWARD", "yes"}});
  const TrainerEnvironment e = TrainerEnvironmentFromProcess();
  EXPECT_EQ(e.JobOrLocal(), "local");
  EXPECT_EQ(e.heartbeat.crash_at_step, -1);
  EXPECT_EQ(e.heartbeat.save_sleep_s, 0);
  EXPECT_FALSE(e.widen_after_backward);
}

}  // namespace
}  // namespace baton
