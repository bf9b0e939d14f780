// DataPlan: which episodes every rank trains on at every micro-step of a run, across epochs and
// across a change of world size.
//
// Micro index k counts one rank's micro-batches from the plan's origin (the start of
// `origin_epoch`). Normally epoch e is LengthBucketBatchSampler::Plan(e) of each rank. After a
// resume under a different world size, the epoch that was in progress becomes a *transition*
// epoch: the batches the old ranks had not consumed yet are dealt round-robin to the new ranks
// (tail padded like any epoch end), so no episode of that epoch is skipped or repeated beyond the
// tail padding; later epochs use the new world's plans. The plan is a pure function of its inputs
// (every rank builds the same one, and a checkpoint stores the transition), so every rank can
// count the step's global valid frames without communication. Batch() is thread-safe (the loader
// thread and the loop share one plan).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "trainer/data/length_bucket_sampler.h"

namespace baton {

struct PlanTransition {
  int64_t epoch = -1;                                      // -1: none
  std::vector<std::vector<std::vector<int64_t>>> batches;  // [rank][i] -> episodes
  bool empty() const { return epoch < 0; }
  nlohmann::json ToJson() const;
  static PlanTransition FromJson(const nlohmann::json& j);  // null -> none
};

// The data position a checkpoint stores (trainer_state.json's "sampler" object): micro index k
// with the plan's origin and transition, the (epoch, batch) it means, and the settings the plan
// was built with, so a resume can rebuild the same plan or refuse another.
struct DataCursor {
  int64_t micro_index = 0;
  int64_t epoch = 0, batch = 0;  // of the next micro-batch on each rank
  int64_t origin_epoch = 0;
  PlanTransition transition;
  std::string plan;  // global | per_rank
  int64_t batch_size = 0;
  nlohmann::json ToJson() const;
  static DataCursor FromJson(const nlohmann::json& j);  // throws nlohmann::json::exception
};

class DataPlan {
 public:
  // `options.rank` is ignored: the plan covers every rank of `options.world_size`.
  DataPlan(std::vector<int64_t> lengths, SamplerOptions options, int64_t origin_epoch = 0,
           PlanTransition transition = {});
  DataPlan(const DataPlan& other);

  // Episodes of `rank`'s micro-batch k (counted from the origin).
  std::vector<int64_t> Batch(int64_t rank, int64_t k);
  // (epoch, batch within that epoch) of micro index k.
  std::pair<int64_t, int64_t> Position(int64_t k) const;

  // The cursor at micro index k (what a checkpoint after k micro-batches stores).
  DataCursor Cursor(int64_t k) const;
  // The plan a checkpoint's cursor describes, for `lengths` and `options.world_size` ranks of the
  // world it was saved on.
  static DataPlan FromCursor(std::vector<int64_t> lengths, SamplerOptions options,
                             const DataCursor& c);

  // Continues from micro index k of this plan on `new_world` ranks; the new plan starts at k = 0.
  // `repeated` (optional) gets the number of padding batches added to the transition epoch.
  DataPlan Reshard(int64_t k, int64_t new_world, int64_t* repeated = nullptr);

  int64_t world_size() const { return options_.world_size; }
  int64_t origin_epoch() const { return origin_epoch_; }
  const PlanTransition& transition() const { return transition_; }
  const std::vector<int64_t>& lengths() const { return lengths_; }

 private:
  int64_t TransitionBatches() const {
    return transition_.empty() ? 0 : static_cast<int64_t>(transition_.batches[0].size());
  }
  const EpochPlan& PlanOf(int64_t rank, int64_t epoch);

  std::vector<int64_t> lengths_;
  SamplerOptions options_;
  int64_t per_epoch_ = 0;
  int64_t origin_epoch_ = 0;
  PlanTransition transition_;
  std::mutex mu_;
  std::map<std::pair<int64_t, int64_t>, EpochPlan> cache_;  // (epoch, rank) -> plan
};

}  // namespace baton
