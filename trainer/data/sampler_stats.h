// Sampler statistics: what a length-bucketed plan costs in padding and in distinct shapes.
//
// Padding waste = padded frames / all frames in padded batches, where a batch pads every episode
// to round_up(max F, pad_multiple). Distinct shapes = distinct padded F (each one a recompile on
// GPU). Computed from lengths alone. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/data/length_bucket_sampler.h"

namespace baton {

struct SamplerStats {
  int64_t episodes = 0;
  int64_t min_frames = 0;
  int64_t max_frames = 0;
  int64_t batches_per_epoch = 0;  // per rank
  double padding_waste = 0.0;     // this rank, fraction in [0, 1)
  int64_t distinct_shapes = 0;    // this rank
  double padding_waste_all_ranks = 0.0;
  int64_t distinct_shapes_all_ranks = 0;
  std::vector<int64_t> shapes;  // this rank's distinct padded F, ascending
  double plan_seconds = 0.0;    // time to build this rank's plan of the epoch
};

SamplerStats ComputeSamplerStats(const std::vector<int64_t>& lengths, const SamplerOptions& options,
                                 int64_t epoch, int64_t pad_multiple);

// Padded length of a batch: round_up(max F, pad_multiple).
int64_t PaddedFrames(const std::vector<int64_t>& lengths, const std::vector<int64_t>& batch,
                     int64_t pad_multiple);

}  // namespace baton
