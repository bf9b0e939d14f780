// The JSON of a run's time buckets (run_time_buckets.h), shared by `baton show --json` and the
// web API's run answer (docs/http_api.md, "time"), so each key is named once:
//   {wall_s, as_of, buckets: {queue, requeue_hold, ..., hang_detection}, productive_steps,
//    ettr, ettr_without_queue, attempts: [{attempt, attempt_id, wall_s, buckets, ettr,
//    interrupted}], checkpoint_interval: {seconds, steps, mean_save_s,
//    mean_time_between_interruptions_s, interruptions, reason}}
// Seconds; ettr is productive / wall (null without wall), ettr_without_queue leaves queue and
// queue_after_requeue out of the wall. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "orchestrator/store/run_time_buckets.h"

namespace baton {

// `first_attempt` is the number the answer gives its first attempt: 1 for the CLI and the API
// alike (schema/step_numbers.h).
nlohmann::json TimeBucketsJson(const RunTimeBuckets& r, int64_t first_attempt);

}  // namespace baton
