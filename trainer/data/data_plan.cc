#include "trainer/data/data_plan.h"

#include <tuple>

namespace baton {

nlohmann::json PlanTransition::ToJson() const {
  if (empty()) return nullptr;
  return {{"epoch", epoch}, {"batches", batches}};
}

PlanTransition PlanTransition::FromJson(const nlohmann::json& j) {
  PlanTransition t;
  if (j.is_null()) return t;
  t.epoch = j.at("epoch").get<int64_t>();
  t.batches = j.at("batches").get<std::vector<std::vector<std::vector<int64_t>>>>();
  return t;
}

nlohmann::json DataCursor::ToJson() const {
  return nlohmann::ordered_json{{"epoch", epoch},
                                {"batch", batch},
                                {"micro_index", micro_index},
                                {"plan", plan},
                                {"batch_size", batch_size},
                                {"origin_epoch", origin_epoch},
                                {"transition", transition.ToJson()}};
}

DataCursor DataCursor::FromJson(const nlohmann::json& j) {
  DataCursor c;
  c.epoch = j.at("epoch").get<int64_t>();
  c.batch = j.at("batch").get<int64_t>();
  c.micro_index = j.at("micro_index").get<int64_t>();
  c.plan = j.at("plan").get<std::string>();
  c.batch_size = j.at("batch_size").get<int64_t>();
  c.origin_epoch = j.value("origin_epoch", int64_t{0});
  c.transition = PlanTransition::FromJson(j.value("transition", nlohmann::json(nullptr)));
  return c;
}

DataCursor DataPlan::Cursor(int64_t k) const {
  DataCursor c;
  c.micro_index = k;
  std::tie(c.epoch, c.batch) = Position(k);
  c.origin_epoch = origin_epoch_;
  c.transition = transition_;
  c.plan = Name(options_.plan);
  c.batch_size = options_.batch_size;
  return c;
}

DataPlan DataPlan::FromCursor(std::vector<int64_t> lengths, SamplerOptions options,
                              const DataCursor& c) {
  return DataPlan(std::move(lengths), options, c.origin_epoch, c.transition);
}

DataPlan::DataPlan(std::vector<int64_t> lengths, SamplerOptions options, int64_t origin_epoch,
                   PlanTransition transition)
    : lengths_(std::move(lengths)),
      options_(options),
      per_epoch_(LengthBucketBatchSampler::BatchesPerEpoch(int64_t(lengths_.size()), options)),
      origin_epoch_(origin_epoch),
      transition_(std::move(transition)) {
  options_.rank = 0;
}

DataPlan::DataPlan(const DataPlan& o)
    : lengths_(o.lengths_),
      options_(o.options_),
      per_epoch_(o.per_epoch_),
      origin_epoch_(o.origin_epoch_),
      transition_(o.transition_) {}

std::pair<int64_t, int64_t> DataPlan::Position(int64_t k) const {
  const int64_t t = TransitionBatches();
  if (t > 0) {
    if (k < t) return {transition_.epoch, k};
    k -= t;
    return {transition_.epoch + 1 + k / per_epoch_, k % per_epoch_};
  }
  return {origin_epoch_ + k / per_epoch_, k % per_epoch_};
}

const EpochPlan& DataPlan::PlanOf(int64_t rank, int64_t epoch) {
  auto key = std::make_pair(epoch, rank);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    if (cache_.size() > 64) cache_.clear();
    SamplerOptions o = options_;
    o.rank = rank;
    it = cache_.emplace(key, LengthBucketBatchSampler::Plan(lengths_, o, epoch)).first;
  }
  return it->second;
}

std::vector<int64_t> DataPlan::Batch(int64_t rank, int64_t k) {
  const auto [epoch, b] = Position(k);
  if (!transition_.empty() && epoch == transition_.epoch) return transition_.batches[rank][b];
  std::lock_guard<std::mutex> lock(mu_);
  return PlanOf(rank, epoch).batch(b);
}

DataPlan DataPlan::Reshard(int64_t k, int64_t new_world, int64_t* repeated) {
  const auto [epoch, b] = Position(k);
  const bool in_transition = !transition_.empty() && epoch == transition_.epoch;
  const int64_t len = in_transition ? TransitionBatches() : per_epoch_;
  SamplerOptions next = options_;
  next.world_size = new_world;
  if (repeated) *repeated = 0;
  if (b == 0 && !in_transition) return DataPlan(lengths_, next, epoch);

  // The epoch's unconsumed batches in (position, rank) order, as the old ranks would have run them.
  std::vector<std::vector<int64_t>> rest;
  for (int64_t i = b; i < len; ++i) {
    for (int64_t r = 0; r < world_size(); ++r) {
      if (in_transition) {
        rest.push_back(transition_.batches[r][i]);
      } else {
        std::lock_guard<std::mutex> lock(mu_);
        rest.push_back(PlanOf(r, epoch).batch(i));
      }
    }
  }
  const int64_t n = static_cast<int64_t>(rest.size());
  const int64_t per_rank = (n + new_world - 1) / new_world;
  PlanTransition t;
  t.epoch = epoch;
  t.batches.assign(static_cast<size_t>(new_world), {});
  for (int64_t i = 0; i < per_rank * new_world; ++i) {
    t.batches[i % new_world].push_back(rest[i % n]);  // wrap: tail padding repeats the first
  }
  if (repeated) *repeated = per_rank * new_world - n;
  return DataPlan(lengths_, next, epoch, std::move(t));
}

}  // namespace baton
