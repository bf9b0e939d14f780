#include "trainer/data/length_bucket_sampler.h"

#include <algorithm>
#include <numeric>

#include "trainer/rng/philox.h"

namespace baton {
namespace {

void Shuffle(std::vector<int64_t>& v, RandomStream rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = rng.UniformInt(i);
    std::swap(v[i - 1], v[j]);
  }
}

// Sorts each pool of `pool` consecutive entries by (length, episode index) and appends the
// batches they cut into to `out` (as starting offsets into `order`).
void SortPools(std::vector<int64_t>& order, const std::vector<int64_t>& lengths, int64_t pool) {
  for (size_t begin = 0; begin < order.size(); begin += pool) {
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(pool));
    std::sort(order.begin() + begin, order.begin() + end, [&](int64_t a, int64_t b) {
      return lengths[a] != lengths[b] ? lengths[a] < lengths[b] : a < b;
    });
  }
}

}  // namespace

Status LengthBucketBatchSampler::CheckOptions(int64_t num_episodes, const SamplerOptions& o) {
  if (o.batch_size < 1) return Status::InvalidArgument("sampler: batch_size must be >= 1");
  if (o.world_size < 1) return Status::InvalidArgument("sampler: world_size must be >= 1");
  if (o.rank < 0 || o.rank >= o.world_size) {
    return Status::InvalidArgument("sampler: rank " + std::to_string(o.rank) +
                                   " is outside world_size " + std::to_string(o.world_size));
  }
  if (o.pool_factor < 1) return Status::InvalidArgument("sampler: pool_factor must be >= 1");
  if (num_episodes < 1) return Status::InvalidArgument("sampler: the dataset has no episodes");
  return Status::Ok();
}

Result<LengthBucketBatchSampler> LengthBucketBatchSampler::Create(std::vector<int64_t> lengths,
                                                                  SamplerOptions options) {
  BATON_RETURN_IF_ERROR(CheckOptions(static_cast<int64_t>(lengths.size()), options));
  return LengthBucketBatchSampler(std::move(lengths), options);
}

LengthBucketBatchSampler::LengthBucketBatchSampler(std::vector<int64_t> lengths,
                                                   SamplerOptions options)
    : lengths_(std::move(lengths)),
      options_(options),
      batches_per_epoch_(BatchesPerEpoch(static_cast<int64_t>(lengths_.size()), options_)) {}

int64_t LengthBucketBatchSampler::BatchesPerEpoch(int64_t n, const SamplerOptions& o) {
  const int64_t per_step = o.world_size * o.batch_size;
  return RoundUp(n, per_step) / per_step;
}

EpochPlan LengthBucketBatchSampler::Plan(const std::vector<int64_t>& lengths,
                                         const SamplerOptions& o, int64_t epoch) {
  const int64_t n = static_cast<int64_t>(lengths.size());
  const int64_t W = o.world_size, B = o.batch_size;
  const int64_t padded = RoundUp(n, W * B);

  // 1. Shuffle by (seed, epoch), then 2. pad the tail by repeating from the start.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Shuffle(order, RandomStream(o.seed, StreamTag::kSamplerShuffle, uint64_t(epoch)));
  order.reserve(static_cast<size_t>(padded));
  for (int64_t i = n; i < padded; ++i) order.push_back(order[static_cast<size_t>(i % n)]);

  EpochPlan plan;
  const int64_t per_rank_batches = padded / (W * B);
  plan.indices.reserve(static_cast<size_t>(per_rank_batches * B));
  plan.offsets.reserve(static_cast<size_t>(per_rank_batches + 1));

  if (o.plan == SamplerPlan::kPerRank) {
    // 3. Round-robin shard, 4. pools sorted per rank, 5. cut, 6. shuffle batch order.
    std::vector<int64_t> mine;
    mine.reserve(static_cast<size_t>(padded / W));
    for (int64_t i = o.rank; i < padded; i += W) mine.push_back(order[static_cast<size_t>(i)]);
    SortPools(mine, lengths, B * o.pool_factor);
    std::vector<int64_t> batch_order(static_cast<size_t>(per_rank_batches));
    std::iota(batch_order.begin(), batch_order.end(), 0);
    Shuffle(batch_order,
            RandomStream(o.seed, StreamTag::kSamplerBatchOrder, uint64_t(epoch), uint64_t(o.rank)));
    for (int64_t b : batch_order) {
      plan.indices.insert(plan.indices.end(), mine.begin() + b * B, mine.begin() + (b + 1) * B);
      plan.offsets.push_back(static_cast<int64_t>(plan.indices.size()));
    }
    return plan;
  }

  // Global: pools span all ranks; the batch order is shared; rank r takes every W-th batch.
  SortPools(order, lengths, B * o.pool_factor * W);
  const int64_t total_batches = padded / B;
  std::vector<int64_t> batch_order(static_cast<size_t>(total_batches));
  std::iota(batch_order.begin(), batch_order.end(), 0);
  Shuffle(batch_order, RandomStream(o.seed, StreamTag::kSamplerBatchOrder, uint64_t(epoch),
                                    /*b=*/~uint64_t(0)));
  for (int64_t k = o.rank; k < total_batches; k += W) {
    const int64_t b = batch_order[static_cast<size_t>(k)];
    plan.indices.insert(plan.indices.end(), order.begin() + b * B, order.begin() + (b + 1) * B);
    plan.offsets.push_back(static_cast<int64_t>(plan.indices.size()));
  }
  return plan;
}

const EpochPlan& LengthBucketBatchSampler::PlanFor(int64_t epoch) const {
  if (cached_epoch_ != epoch) {
    cached_plan_ = Plan(lengths_, options_, epoch);
    cached_epoch_ = epoch;
  }
  return cached_plan_;
}

std::vector<int64_t> LengthBucketBatchSampler::Next() {
  if (cursor_.batch >= batches_per_epoch_) cursor_ = {cursor_.epoch + 1, 0};
  std::vector<int64_t> batch = PlanFor(cursor_.epoch).batch(cursor_.batch);
  ++cursor_.batch;
  return batch;
}

std::vector<int64_t> LengthBucketBatchSampler::Peek(const SamplerCursor& cursor) const {
  SamplerCursor c = cursor;
  if (c.batch >= batches_per_epoch_) c = {c.epoch + 1, 0};
  if (c.epoch == cached_epoch_) return cached_plan_.batch(c.batch);
  return Plan(lengths_, options_, c.epoch).batch(c.batch);
}

Status LengthBucketBatchSampler::load_state(const SamplerCursor& cursor) {
  if (cursor.epoch < 0 || cursor.batch < 0 || cursor.batch > batches_per_epoch_) {
    return Status::InvalidArgument("sampler cursor (epoch " + std::to_string(cursor.epoch) +
                                   ", batch " + std::to_string(cursor.batch) +
                                   ") is outside an epoch of " +
                                   std::to_string(batches_per_epoch_) + " batches");
  }
  cursor_ = cursor;
  return Status::Ok();
}

}  // namespace baton
