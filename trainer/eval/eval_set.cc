#include "trainer/eval/eval_set.h"

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>

#include "schema/checkpoint_manifest.h"
#include "trainer/rng/philox.h"

namespace baton {

namespace {

// "3, 7, 12" (at most `max` of them, then how many more).
std::string JoinIndices(const std::vector<int64_t>& v, size_t max = 20) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max; ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > max) out += " and " + std::to_string(v.size() - max) + " more";
  return out;
}

std::string JoinIds(const std::vector<std::string>& v, size_t max = 20) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > max) out += " and " + std::to_string(v.size() - max) + " more";
  return out;
}

// The training index's fingerprint: data.path's, and which of its episodes are held out.
std::string TrainFingerprint(const std::string& data_fingerprint,
                             const std::vector<int64_t>& held_out) {
  std::string text = data_fingerprint + "\neval held out:";
  for (int64_t i : held_out) text += " " + std::to_string(i);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, uint64_t(XXH3_64bits(text.data(), text.size())));
  return hex;
}

// `data` split into the episodes at `held_out` (ascending) and the rest.
EvalSet SplitByIndex(const DatasetIndex& data, const std::vector<int64_t>& held_out) {
  auto train = std::make_shared<DatasetIndex>(data);
  auto eval = std::make_shared<DatasetIndex>(data);
  train->episodes.clear();
  eval->episodes.clear();
  EvalSet set;
  const std::set<int64_t> out(held_out.begin(), held_out.end());
  for (int64_t i = 0; i < int64_t(data.episodes.size()); ++i) {
    if (out.count(i)) {
      eval->episodes.push_back(data.episodes[size_t(i)]);
      set.eval_keys.push_back(i);
    } else {
      train->episodes.push_back(data.episodes[size_t(i)]);
      set.train_to_data.push_back(i);
    }
  }
  train->fingerprint = TrainFingerprint(data.fingerprint, held_out);
  eval->fingerprint = TrainFingerprint(data.fingerprint + " eval", held_out);
  set.train = std::move(train);
  set.eval = std::move(eval);
  return set;
}

// eval.data episodes that are data.path episodes: the same id and length, and the same bytes.
Result<std::vector<std::string>> SharedEpisodes(const DatasetIndex& data,
                                                const DatasetIndex& eval) {
  std::map<std::pair<std::string, int64_t>, int64_t> by_id;
  for (int64_t i = 0; i < int64_t(data.episodes.size()); ++i)
    by_id[{data.episodes[size_t(i)].id, data.episodes[size_t(i)].n_video}] = i;
  std::vector<std::string> shared;
  for (int64_t k = 0; k < int64_t(eval.episodes.size()); ++k) {
    const EpisodeMeta& e = eval.episodes[size_t(k)];
    auto it = by_id.find({e.id, e.n_video});
    if (it == by_id.end()) continue;
    BATON_ASSIGN_OR_RETURN(const std::string a, HashFile(data.EpisodePath(it->second)));
    BATON_ASSIGN_OR_RETURN(const std::string b, HashFile(eval.EpisodePath(k)));
    if (a == b) shared.push_back(e.id);
  }
  return shared;
}

Result<EvalSet> SplitByFolder(const DatasetIndex& data, const EvalSection& eval) {
  Result<DatasetIndex> loaded = LoadDatasetIndex(eval.data);
  if (!loaded.ok())
    return Status::Config("eval.data: " + eval.data + ": " + loaded.status().message());
  auto held = std::make_shared<DatasetIndex>(std::move(loaded).value());
  if (data.shape && held->shape && !(*data.shape == *held->shape)) {
    return Status::Config("eval.data: " + held->dir + " holds tensors of another size (" +
                          held->shape->ToString() + ") than data.path " + data.dir + " (" +
                          data.shape->ToString() + ")");
  }
  BATON_ASSIGN_OR_RETURN(const std::vector<std::string> shared, SharedEpisodes(data, *held));
  if (!shared.empty()) {
    return Status::Config("eval.data: " + std::to_string(shared.size()) + " eval episode(s) of " +
                          held->dir + " are training episodes of data.path " + data.dir + ": " +
                          JoinIds(shared));
  }
  EvalSet set;
  set.train = std::make_shared<DatasetIndex>(data);
  set.train_to_data.resize(data.episodes.size());
  std::iota(set.train_to_data.begin(), set.train_to_data.end(), int64_t(0));
  set.eval_keys.resize(held->episodes.size());
  std::iota(set.eval_keys.begin(), set.eval_keys.end(), int64_t(0));
  set.eval = std::move(held);
  return set;
}

}  // namespace

std::vector<int64_t> DrawHeldOut(int64_t episodes, int64_t count, int64_t seed) {
  std::vector<int64_t> order(size_t(std::max<int64_t>(episodes, 0)));
  std::iota(order.begin(), order.end(), int64_t(0));
  RandomStream r(uint64_t(seed), StreamTag::kEvalSplit);
  for (int64_t i = episodes - 1; i > 0; --i)
    std::swap(order[size_t(i)], order[size_t(r.UniformInt(uint64_t(i + 1)))]);
  order.resize(size_t(std::clamp<int64_t>(count, 0, episodes)));
  std::sort(order.begin(), order.end());
  return order;
}

Result<EvalSet> SplitEvalSet(const DatasetIndex& data, const EvalSection& eval) {
  const int64_t n = int64_t(data.episodes.size());
  if (!eval.data.empty()) return SplitByFolder(data, eval);
  std::vector<int64_t> held_out;
  if (eval.fraction > 0) {
    const int64_t count = std::llround(eval.fraction * double(n));
    if (count < 1) {
      return Status::Config("eval.fraction " + std::to_string(eval.fraction) + " of the " +
                            std::to_string(n) + " episodes of data.path " + data.dir +
                            " is an empty eval set (raise eval.fraction)");
    }
    held_out = DrawHeldOut(n, count, eval.seed);
  } else if (!eval.episodes.empty()) {
    std::vector<int64_t> outside;
    for (int64_t i : eval.episodes) (i >= n ? outside : held_out).push_back(i);
    if (!outside.empty()) {
      return Status::Config("eval.episodes: episode(s) " + JoinIndices(outside) +
                            " are not in data.path " + data.dir + ", which holds episodes 0.." +
                            std::to_string(n - 1));
    }
    std::sort(held_out.begin(), held_out.end());
  } else {
    EvalSet set;
    set.train = std::make_shared<DatasetIndex>(data);
    set.train_to_data.resize(size_t(n));
    std::iota(set.train_to_data.begin(), set.train_to_data.end(), int64_t(0));
    return set;
  }
  if (int64_t(held_out.size()) >= n) {
    return Status::Config("eval: holding out " + std::to_string(held_out.size()) + " of the " +
                          std::to_string(n) + " episodes of data.path " + data.dir +
                          " leaves none to train on");
  }
  return SplitByIndex(data, held_out);
}

}  // namespace baton
