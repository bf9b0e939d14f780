// Keep-best as retention and export see it: what the run's eval result files (the truth, so
// the answer stays the same across requeues, resumes and world-size changes) say about the
// checkpoints on disk.
//
// RetentionRuleOf turns checkpoint.keep_* into the rule RetentionKeeps (schema/storage_forecast.h)
// applies; WithEvalResults fills each listed checkpoint's value of the keep-best metric and
// whether it still waits for one; BestEvaluated picks the checkpoint `baton export --best` ships.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/checkpoint_manifest.h"
#include "schema/eval_results.h"
#include "schema/run_config.h"
#include "schema/storage_forecast.h"

namespace baton {

// The metric keep-best ranks by, and export --best when keep-best is off.
inline constexpr const char* kDefaultBestMetric = "eval.loss";

RetentionRule RetentionRuleOf(const CheckpointSection& checkpoint);

// `listed` (step and finite set) with value and awaiting_eval filled from `evals` when
// keep-best is on (`config.checkpoint.keep_best_metric`); unchanged otherwise. A checkpoint is
// awaiting when it is an eval target (IsEvalTarget) without a result file; one with a result
// whose metric is missing or not finite has no value and does not wait.
std::vector<RetainedCheckpoint> WithEvalResults(const RunConfig& config, const EvalResults& evals,
                                                std::vector<RetainedCheckpoint> listed);

// `valid` (checkpoints of `checkpoints_dir`, newest first) as RetentionKeeps takes them, with the
// eval results of the run folder that holds `checkpoints_dir` when keep-best is on.
std::vector<RetainedCheckpoint> RetainedOnDisk(const RunConfig& config,
                                               const std::string& checkpoints_dir,
                                               const std::vector<CheckpointEntry>& valid);

// Among `steps` (checkpoints on disk), the one with the best `metric` in `evals` (lowest value,
// then lowest step); none when no listed step has a finite value.
std::optional<int64_t> BestEvaluated(const std::vector<int64_t>& steps, const EvalResults& evals,
                                     const std::string& metric);

}  // namespace baton
