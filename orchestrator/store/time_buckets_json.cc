#include "orchestrator/store/time_buckets_json.h"

#include "orchestrator/store/record_json.h"

using nlohmann::json;

namespace baton {

namespace {

json BucketsJson(const TimeBuckets& b) {
  json out = json::object();
  for (TimeBucket k : AllTimeBuckets()) out[Name(k)] = JsonNumber(b[k]);
  return out;
}

}  // namespace

json TimeBucketsJson(const RunTimeBuckets& r, int64_t first_attempt) {
  json attempts = json::array();
  int64_t n = first_attempt;
  for (const AttemptTimeBuckets& a : r.attempts) {
    attempts.push_back({{"attempt", n++},
                        {"attempt_id", a.attempt_id},
                        {"wall_s", JsonNumber(a.buckets.wall_s)},
                        {"buckets", BucketsJson(a.buckets)},
                        {"ettr", JsonNumber(Ettr(a.buckets))},
                        {"interrupted", a.interrupted}});
  }
  const CheckpointIntervalAdvice advice = AdviseCheckpointInterval(r);
  return json{
      {"wall_s", JsonNumber(r.run.wall_s)},
      {"as_of", JsonNumber(r.as_of)},
      {"buckets", BucketsJson(r.run)},
      {"productive_steps", r.run.productive_steps},
      {"ettr", JsonNumber(Ettr(r.run))},
      {"ettr_without_queue", JsonNumber(EttrWithoutQueue(r.run))},
      {"attempts", std::move(attempts)},
      {"checkpoint_interval",
       {{"seconds", JsonNumber(advice.seconds)},
        {"steps", JsonNumber(advice.steps)},
        {"mean_save_s", JsonNumber(advice.mean_save_s)},
        {"mean_time_between_interruptions_s", JsonNumber(advice.mean_time_between_interruptions_s)},
        {"interruptions", advice.interruptions},
        {"reason", JsonTextOrNull(advice.reason)}}}};
}

}  // namespace baton
