// The held-out set of a run's eval: section (docs/eval.md, "Evaluation"), and what is left of
// data.path to train on. One pure function of the dataset index(es) and the config, so the
// training job and `baton-train eval` see the same split.
//
//   eval.fraction + eval.seed  round(fraction x N) episodes of data.path, drawn by eval.seed;
//   eval.episodes              those indices of data.path;
//   eval.data                  every episode of a second dataset folder (data.path is untouched).
//
// Fraction and list episodes are removed from the training index, whose fingerprint then covers
// the held-out set: an exact resume with another eval set is refused like any other data
// change. Bad input is a config error (78) naming the key and the episodes: an empty eval set,
// one that leaves nothing to train on, indices outside data.path, an eval.data folder with other
// tensor sizes, or eval.data episodes that are data.path episodes (same id, length and bytes).
// Immutable after the split; torch-free.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "schema/run_config.h"
#include "schema/status.h"
#include "trainer/data/dataset_index.h"

namespace baton {

struct EvalSet {
  // What the sampler draws from: data.path without the held-out episodes (all of it when
  // there is no eval, or with eval.data).
  std::shared_ptr<const DatasetIndex> train;
  // The held-out episodes (empty when the config has no eval). Its folder is the episodes' own.
  std::shared_ptr<const DatasetIndex> eval;
  // Per eval episode: its index in its own dataset (data.path, or eval.data), which keys its
  // fixed draws, so a checkpoint's value does not depend on how the set was cut.
  std::vector<int64_t> eval_keys;
  // Per training episode: its index in data.path (the identity without held-out episodes).
  std::vector<int64_t> train_to_data;
  bool enabled() const { return eval && !eval->episodes.empty(); }
};

// The split of `data` (data.path's index) by `eval`. Loads eval.data when given.
Result<EvalSet> SplitEvalSet(const DatasetIndex& data, const EvalSection& eval);

// The indices of data.path that eval.fraction with eval.seed holds out, ascending.
std::vector<int64_t> DrawHeldOut(int64_t episodes, int64_t count, int64_t seed);

}  // namespace baton
