#include "trainer/data/sampler_stats.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "schema/padding_waste.h"

namespace baton {
namespace {

struct Tally {
  int64_t valid = 0;
  int64_t padded = 0;
  std::set<int64_t> shapes;
  void Add(const std::vector<int64_t>& lengths, const EpochPlan& plan, int64_t pad_multiple) {
    for (int64_t b = 0; b < plan.num_batches(); ++b) {
      int64_t max_f = 0, sum_f = 0;
      for (int64_t i = plan.offsets[b]; i < plan.offsets[b + 1]; ++i) {
        const int64_t f = lengths[plan.indices[i]];
        max_f = std::max(max_f, f);
        sum_f += f;
      }
      const int64_t fp = RoundUp(max_f, pad_multiple);
      valid += sum_f;
      padded += fp * (plan.offsets[b + 1] - plan.offsets[b]);
      shapes.insert(fp);
    }
  }
  // `padded`: all frames of the padded batches, padding included.
  double waste() const {
    return padded == 0 ? 0.0 : PaddingWaste(double(valid), double(padded - valid));
  }
};

}  // namespace

int64_t PaddedFrames(const std::vector<int64_t>& lengths, const std::vector<int64_t>& batch,
                     int64_t pad_multiple) {
  int64_t max_f = 0;
  for (int64_t i : batch) max_f = std::max(max_f, lengths[i]);
  return RoundUp(max_f, pad_multiple);
}

SamplerStats ComputeSamplerStats(const std::vector<int64_t>& lengths, const SamplerOptions& options,
                                 int64_t epoch, int64_t pad_multiple) {
  SamplerStats s;
  s.episodes = static_cast<int64_t>(lengths.size());
  s.min_frames = *std::min_element(lengths.begin(), lengths.end());
  s.max_frames = *std::max_element(lengths.begin(), lengths.end());
  s.batches_per_epoch = LengthBucketBatchSampler::BatchesPerEpoch(s.episodes, options);

  const auto t0 = std::chrono::steady_clock::now();
  const EpochPlan mine = LengthBucketBatchSampler::Plan(lengths, options, epoch);
  s.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  Tally rank_tally;
  rank_tally.Add(lengths, mine, pad_multiple);
  s.padding_waste = rank_tally.waste();
  s.distinct_shapes = static_cast<int64_t>(rank_tally.shapes.size());
  s.shapes.assign(rank_tally.shapes.begin(), rank_tally.shapes.end());

  Tally all;
  for (int64_t r = 0; r < options.world_size; ++r) {
    SamplerOptions o = options;
    o.rank = r;
    all.Add(lengths, r == options.rank ? mine : LengthBucketBatchSampler::Plan(lengths, o, epoch),
            pad_multiple);
  }
  s.padding_waste_all_ranks = all.waste();
  s.distinct_shapes_all_ranks = static_cast<int64_t>(all.shapes.size());
  return s;
}

}  // namespace baton
