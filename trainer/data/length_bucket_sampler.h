// LengthBucketBatchSampler: which episodes go into which packed micro-batch, per rank and epoch.
//
// The plan of an epoch is a pure function of (lengths, batch_size, rank, world_size, seed, epoch,
// pool_factor, plan kind), so every rank can compute every other rank's batches (the trainer uses
// that to know the global valid-frame count without communication) and a resume needs only the
// cursor (epoch, batch). Two plans:
//  - kPerRank (the reference plan, docs/design.md): shuffle by (seed, epoch) -> pad the tail so
//    the count is a multiple of world_size * batch_size -> deal round-robin to ranks -> on each
//    rank, pools of batch_size * pool_factor sorted by length -> cut into batches -> shuffle
//    batch order.
//  - kGlobal (default): shuffle -> pad -> pools of batch_size * pool_factor * world_size sorted by
//    length -> cut -> shuffle batch order -> rank r takes batches r, r + W, r + 2W, ...; pools span
//    all ranks, so batches are tighter for free.
// Tail padding repeats episodes from the start of the shuffled order, so every rank has the same
// number of full batches. Lengths come from metadata; the sampler never opens an episode file.
// A sampler object is not thread-safe; the static planning functions are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/run_config.h"
#include "schema/status.h"

namespace baton {

struct SamplerOptions {
  int64_t batch_size = 4;
  int64_t world_size = 1;
  int64_t rank = 0;
  int64_t pool_factor = 50;
  uint64_t seed = 0;
  SamplerPlan plan = SamplerPlan::kGlobal;
};

// The batches of one rank in one epoch, flattened: batch i is
// indices[offsets[i] .. offsets[i+1]).
struct EpochPlan {
  std::vector<int64_t> indices;
  std::vector<int64_t> offsets = {0};
  int64_t num_batches() const { return static_cast<int64_t>(offsets.size()) - 1; }
  std::vector<int64_t> batch(int64_t i) const {
    return {indices.begin() + offsets[i], indices.begin() + offsets[i + 1]};
  }
};

// Where the sampler stands: the next batch to hand out is `batch` of `epoch`.
struct SamplerCursor {
  int64_t epoch = 0;
  int64_t batch = 0;
  bool operator==(const SamplerCursor& o) const { return epoch == o.epoch && batch == o.batch; }
};

class LengthBucketBatchSampler {
 public:
  // `lengths[i]` is episode i's latent frame count (its bucket key). kInvalidArgument naming the
  // bad option, or an empty dataset (a config validated upstream never has one).
  static Result<LengthBucketBatchSampler> Create(std::vector<int64_t> lengths,
                                                 SamplerOptions options);
  // The same checks alone, for a caller that plans with the static functions below.
  static Status CheckOptions(int64_t num_episodes, const SamplerOptions& options);

  // The plan of `rank` in `epoch` — the pure function the class iterates over.
  static EpochPlan Plan(const std::vector<int64_t>& lengths, const SamplerOptions& options,
                        int64_t epoch);
  // Batches every rank gets per epoch: round_up(n, W * B) / (W * B).
  static int64_t BatchesPerEpoch(int64_t num_episodes, const SamplerOptions& options);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const SamplerOptions& options() const { return options_; }
  const std::vector<int64_t>& lengths() const { return lengths_; }

  // The next batch (episode indices) and advance; rolls over into the next epoch.
  std::vector<int64_t> Next();
  // The batch at `cursor` without moving (plans of other epochs are computed on the side).
  std::vector<int64_t> Peek(const SamplerCursor& cursor) const;

  SamplerCursor state() const { return cursor_; }
  // Continue from `cursor`; kInvalidArgument (the cursor unchanged) when it lies outside an
  // epoch, as a checkpoint of another dataset or batch size would.
  [[nodiscard]] Status load_state(const SamplerCursor& cursor);
  // Start of `epoch` (what set_epoch does for a PyTorch sampler).
  [[nodiscard]] Status set_epoch(int64_t epoch) { return load_state({epoch, 0}); }

 private:
  LengthBucketBatchSampler(std::vector<int64_t> lengths, SamplerOptions options);
  const EpochPlan& PlanFor(int64_t epoch) const;

  std::vector<int64_t> lengths_;
  SamplerOptions options_;
  int64_t batches_per_epoch_ = 0;
  SamplerCursor cursor_;
  mutable int64_t cached_epoch_ = -1;
  mutable EpochPlan cached_plan_;
};

// round_up(x, m) for m >= 1.
inline int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace baton
