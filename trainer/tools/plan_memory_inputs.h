// What `baton-train plan-memory` plans: the model's sizes and the longest packed row, gathered
// from the run config, model.init_from's config.json (or --init-from) and the dataset's longest
// episode, or from the command's flags without a dataset (plan_memory_cmd.cc).
//
// Every size is range-checked against PlanSizeLimits before the plan runs, naming its source: a
// flag (64), config.json of model.init_from or the dataset (65); the run config's own keys are
// bounded by its schema (78). The dataset's longest episode is read once, so a lying n_video is
// caught by its file (65) instead of planning a row that is not there. Fails fast (FailAt).
#pragma once

#include <cstdint>
#include <string>

#include "schema/run_config.h"
#include "trainer/memory/memory_plan.h"

namespace baton {

// The row without a dataset (frames > 0), and the sizes config.json would otherwise give.
struct PlanRowFlags {
  std::string init_from;  // overrides model.init_from
  int64_t frames = 0, height = 0, width = 0, action_steps = 0, text_len = 0;
  int64_t channels = 0, action_dim = 0, text_dim = 0;
};

struct PlanInputs {
  PlanModel model;
  PlanRow row;             // with its attention work (PlanRowAttention)
  std::string row_source;  // the dataset folder, or "--frames"
};

// Fails with `exit_code` naming `what` (a flag, or a file and its key) when `v` is outside
// [lo, hi].
void CheckPlanSize(int64_t v, int64_t lo, int64_t hi, const std::string& what, int exit_code,
                   const std::string& hint);

// `config_path` is the config as named on the command line. With flags.frames > 0 the height,
// width, action steps and text length must be >= 1 (the caller checks).
PlanInputs GatherPlanInputs(const RunConfig& config, const std::string& config_path,
                            const PlanRowFlags& flags);

}  // namespace baton
