#include "trainer/train/trainer_environment.h"

#include <cstdlib>

#include "schema/grace_seconds.h"

namespace baton {

namespace {

// The variable's text; "" when it is unset.
std::string Text(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// A number, or `fallback` when the variable is unset, empty or not a number.
double Number(const char* name, double fallback) {
  const std::string v = Text(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  return *end == '\0' ? d : fallback;
}

}  // namespace

TrainerEnvironment TrainerEnvironmentFromProcess() {
  TrainerEnvironment e;
  e.job_id = Text("SLURM_JOB_ID");
  e.restart_count = std::atoll(Text("SLURM_RESTART_COUNT").c_str());
  e.node_name = Text("SLURMD_NODENAME");
  e.grace_s = Text(kGraceEnv);
  e.episode_log = Text("BATON_EPISODE_LOG");
  e.stepper.block_sleep_us = 1000 * std::atoll(Text("BATON_TEST_BLOCK_SLEEP_MS").c_str());
  e.stepper.signal_at = Text("BATON_TEST_SIGNAL_AT");
  e.heartbeat.save_sleep_s = Number("BATON_TEST_SAVE_SLEEP_S", 0);
  e.heartbeat.first_step_sleep_s = Number("BATON_TEST_FIRST_STEP_SLEEP_S", 0);
  e.heartbeat.crash_at_step = int64_t(Number("BATON_TEST_CRASH_AT_STEP", -1));
  e.heartbeat.crash_rank = int64_t(Number("BATON_TEST_CRASH_RANK", 0));
  e.widen_after_backward = Text("BATON_TEST_WIDEN_AFTER_BACKWARD") == "1";
  e.ckpt_write_delay_ms = Text("BATON_TEST_CKPT_WRITE_DELAY_MS");
  return e;
}

}  // namespace baton
