// eval.mode inline: the training job evaluates its own committed checkpoints at the step
// boundary (docs/eval.md, "Inline mode"). The model's weights at that boundary are the
// checkpoint's (the save wrote them; a background save is committed first), so they are
// evaluated in memory, under no grad, with the eval's own draws: training after it goes on bit
// for bit as without it. Rank 0 writes evals/step_<N>.json and appends the `eval` event, whose
// `seconds` are the time the eval took (the run's `eval` time). A result that cannot be written
// is said on stderr; training goes on. Collective: every rank calls it at the same boundary.
#pragma once

#include <cstdint>
#include <string>

#include "schema/run_config.h"
#include "trainer/model/video_action_model.h"
#include "trainer/train/segment_log.h"
#include "trainer/train/segment_setup.h"

namespace baton {

// Whether the training job evaluates the checkpoint of `step` (inline mode, an eval target).
bool WantsInlineEval(const RunConfig& config, int64_t step);

// Evaluates the committed checkpoint of `step`, whose weights `model` holds.
void EvalInline(SegmentLog& log, const Setup& s, VideoActionModel& model, int64_t step,
                const std::string& config_hash);

// A resumed segment whose checkpoint is an inline eval target that has no result yet (the
// segment that saved it stopped before its eval): evaluates it before the first step.
void EvalResumedCheckpoint(SegmentLog& log, const Setup& s, VideoActionModel& model, int64_t step0,
                           const std::string& checkpoint, const std::string& config_hash);

}  // namespace baton
