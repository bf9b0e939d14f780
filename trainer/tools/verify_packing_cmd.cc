// `baton-train verify-packing`: the packing check made exact (train/verify_packing.h):
// sampler stats, then a batch of 4 equal lengths and a batch of 4 different lengths, packed
// forward / loss / backward against 4 single-episode runs, on the CPU or a GPU. Exit 1 when a
// relative difference passes its dtype's bound (float64 1e-10; float32 and bf16 derived from the
// dtype's unit roundoff and the model's shape, see Tolerance) or a gradient is not finite.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "schema/exit_codes.h"
#include "trainer/build_options.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/empty_text_tensor.h"
#include "trainer/data/sampler_stats.h"
#include "trainer/fail.h"
#include "trainer/tools/commands.h"
#include "trainer/train/device_memory.h"
#include "trainer/train/device_select.h"
#include "trainer/train/rounding_bound.h"
#include "trainer/train/torch_dtype.h"
#include "trainer/train/train_step.h"
#include "trainer/train/verify_packing.h"

namespace baton {

namespace {
struct Args {
  std::string config;
  std::string dtype = "float64";
  std::string device;  // empty: the config's train.device
  bool json = false;
};

// Pass bounds on the relative differences. float64 is the exactness check (1e-10: packing is
// the same sum, agreeing to ~1e-15). float32 and bf16 only sum in a different order, so each
// side is within its rounding bound of the exact result (train/rounding_bound.h) and the two
// within twice that: per side, every matmul weight's input cast and output, forward and
// backward, and each attention's scores, probabilities and output (self and text, per layer),
// forward and backward, are stored in the dtype; the sums run over the width, the FFN and the
// row's tokens (keys, and the weight gradients' sums). Both dtypes are judged on the loss and on
// the gradients as one vector: per tensor, a gradient that is zero in exact arithmetic (a key
// bias under softmax) is all rounding noise, which no bound on a ratio can hold.
int64_t MatmulWeights(VideoActionModel& model) {
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.dim() == 2 ? 1 : 0;
  return n;
}

double Tolerance(DType dtype, VideoActionModel& model, const RunConfig& config,
                 int64_t row_tokens) {
  if (dtype == DType::kFloat64) return 1e-10;
  const int64_t matmul_weights = MatmulWeights(model);
  const int64_t layers = config.model.layers;
  const int64_t roundings = 2 * (2 * matmul_weights + 3 * 2 * layers);
  std::vector<int64_t> sums;
  for (int64_t l = 0; l < layers; ++l) {
    for (int64_t n : {config.model.dim, config.model.ffn_dim, row_tokens, row_tokens}) {
      sums.push_back(n);
    }
  }
  return 2 * RoundingBound(Name(dtype), sums, roundings);
}

SamplerStats StatsOf(const RunConfig& config, const DatasetIndex& index) {
  SamplerOptions so;
  so.batch_size = config.data.batch_size;
  so.pool_factor = config.data.pool_factor;
  so.seed = uint64_t(config.run.seed);
  so.plan = config.data.plan;
  return ComputeSamplerStats(index.BucketKeys(), so, 0, config.data.pad_multiple);
}

// The two batches compared: four episodes of one length (the most common), and the four most
// different lengths.
struct TestBatches {
  std::vector<int64_t> equal, mixed;
};

TestBatches PickBatches(const DatasetIndex& index) {
  std::map<int64_t, std::vector<int64_t>> by_len;
  for (size_t i = 0; i < index.episodes.size(); ++i)
    by_len[index.episodes[i].frames].push_back(int64_t(i));
  TestBatches b;
  size_t best = 0;
  for (const auto& [len, ids] : by_len) {
    if (ids.size() > best) {
      best = ids.size();
      b.equal = ids;
    }
  }
  while (b.equal.size() < 4) b.equal.push_back(b.equal.back());  // repeats are fine: same draws
  b.equal.resize(4);
  std::vector<int64_t> lens;
  for (const auto& [len, ids] : by_len) lens.push_back(ids[0]);
  for (int k = 0; k < 4 && !lens.empty(); ++k) b.mixed.push_back(lens[(lens.size() - 1) * k / 3]);
  while (b.mixed.size() < 4) b.mixed.push_back(b.mixed.back());
  return b;
}

std::vector<EpisodeData> ReadEpisodes(const DatasetIndex& index, const std::vector<int64_t>& ids) {
  std::vector<EpisodeData> eps;
  for (int64_t i : ids)
    eps.push_back(
        BATON_VALUE_OR_FAIL(ReadEpisode(index, i), "regenerate or remove the episode named above"));
  return eps;
}

// Both comparisons against their bounds.
struct Verdict {
  std::vector<PackingComparison> results;
  std::vector<double> tols;  // each check's bound
  double tol = 0;            // the loosest check's: the one printed
  bool ok = true;
};

Verdict Judge(std::vector<PackingComparison> results, DType dtype_word, VideoActionModel& model,
              const RunConfig& config) {
  Verdict v;
  v.results = std::move(results);
  for (const auto& r : v.results) {
    v.tols.push_back(Tolerance(dtype_word, model, config, r.row_tokens));
    v.tol = std::max(v.tol, v.tols.back());
    const double grad = dtype_word == DType::kFloat64 ? r.max_grad_rel_diff : r.grad_norm_rel_diff;
    v.ok = v.ok && r.loss_rel_diff <= v.tols.back() && grad <= v.tols.back() &&
           r.grads_finite == r.grads_total;
  }
  return v;
}

void PrintJson(const Args& a, const SamplerStats& stats, const torch::Device& device,
               const Verdict& v, VideoActionModel& model) {
  nlohmann::ordered_json j{{"sampler",
                            {{"batches_per_epoch", stats.batches_per_epoch},
                             {"padding_waste", stats.padding_waste},
                             {"distinct_shapes", stats.distinct_shapes},
                             {"min_frames", stats.min_frames},
                             {"max_frames", stats.max_frames}}},
                           {"dtype", a.dtype},
                           {"device", DeviceDescription(device)},
                           {"tolerance", v.tol},
                           {"ok", v.ok},
                           {"checks", nlohmann::ordered_json::array()}};
  for (size_t i = 0; i < v.results.size(); ++i) {
    const auto& r = v.results[i];
    j["checks"].push_back({{"name", r.name},
                           {"frames", r.frames},
                           {"padded_frames", r.padded_frames},
                           {"row_tokens", r.row_tokens},
                           {"matmul_weights", MatmulWeights(model)},
                           {"tolerance", v.tols[i]},
                           {"loss_packed", r.loss_packed},
                           {"loss_single", r.loss_single},
                           {"loss_rel_diff", r.loss_rel_diff},
                           {"max_grad_rel_diff", r.max_grad_rel_diff},
                           {"grad_norm_rel_diff", r.grad_norm_rel_diff},
                           {"worst_param", r.worst_param},
                           {"grads_finite", r.grads_finite},
                           {"grads_total", r.grads_total}});
  }
  std::printf("%s\n", j.dump().c_str());
}

void PrintText(const Args& a, const SamplerStats& stats, const torch::Device& device,
               const Verdict& v) {
  std::printf(
      "sampler: %lld batches/epoch, padding waste %.2f %%, %lld distinct shapes, F "
      "%lld..%lld\n",
      (long long)stats.batches_per_epoch, 100 * stats.padding_waste,
      (long long)stats.distinct_shapes, (long long)stats.min_frames, (long long)stats.max_frames);
  for (const auto& r : v.results) {
    std::string f;
    for (int64_t x : r.frames) f += (f.empty() ? "" : "/") + std::to_string(x);
    std::printf(
        "%-18s F %s -> padded %lld: loss packed %.12g single %.12g rel diff %.2e; "
        "max grad rel diff %.2e (%s), as one vector %.2e; %lld/%lld grads finite\n",
        r.name.c_str(), f.c_str(), (long long)r.padded_frames, r.loss_packed, r.loss_single,
        r.loss_rel_diff, r.max_grad_rel_diff, r.worst_param.c_str(), r.grad_norm_rel_diff,
        (long long)r.grads_finite, (long long)r.grads_total);
  }
  std::printf("%s (%s on %s, tolerance %.2e)\n", v.ok ? "PASS" : "FAIL", a.dtype.c_str(),
              DeviceDescription(device).c_str(), v.tol);
}

int RunVerifyPacking(const Args& a) {
  RunConfig config =
      BATON_VALUE_OR_FAIL(LoadRunConfig(a.config, TrainerConfigOptions()), "fix the config");
  auto loaded = LoadDatasetIndex(config.data.path);
  if (!loaded.ok())
    FailAt(__FILE__, __LINE__, kExitData, loaded.status().ToString(),
           "check data.path in the config");
  const DatasetIndex index = std::move(loaded).value();
  const SamplerStats stats = StatsOf(config, index);
  const TestBatches batches = PickBatches(index);

  const DType dtype_word = Parse<DType>(a.dtype).value();  // the flag's check took it
  const torch::Dtype dtype = TorchDtype(dtype_word);
  ApplyDeterminism(config.train.deterministic);
  const torch::Device device =
      SelectDevice(a.device.empty() ? config.train.device : Parse<Device>(a.device).value(), 0);
  const DatasetShape shape = ReadEpisodes(index, {0})[0].shape;
  ModelDims dims = MakeModelDims(config, shape);
  dims.zero_init = false;  // every parameter gets a gradient worth comparing
  torch::manual_seed(uint64_t(config.run.seed));
  VideoActionModel model(dims);  // initialised on the CPU: the same weights on any device
  model->to(device, dtype == torch::kBFloat16 ? torch::kFloat32 : dtype);
  // The dropout draws are part of what must match.
  const torch::Tensor empty_text = EmptyTextTensor(config.objective.text_dropout, index.dir, shape);
  const Verdict v =
      Judge({ComparePackedWithSingle(model, config, ReadEpisodes(index, batches.equal), 0, dtype,
                                     "equal_lengths", empty_text),
             ComparePackedWithSingle(model, config, ReadEpisodes(index, batches.mixed), 0, dtype,
                                     "different_lengths", empty_text)},
            dtype_word, model, config);
  if (a.json) {
    PrintJson(a, stats, device, v, model);
  } else {
    PrintText(a, stats, device, v);
  }
  return v.ok ? kExitOk : kExitFailure;
}

}  // namespace

void RegisterVerifyPacking(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("verify-packing", "Packed vs single-episode loss and gradients");
  cmd->add_option("--config", a->config, "Run config (YAML)")->required();
  cmd->add_option("--dtype", a->dtype,
                  "float64 | float32 | bfloat16 (float32 weights, bf16 autocast compute)")
      ->check(CLI::IsMember(Words<DType>()))
      ->capture_default_str();
  cmd->add_option("--device", a->device, "cpu | cuda (default: the config's train.device)")
      ->check(CLI::IsMember(Words<Device>()));
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->callback([=] { *selected = [=] { return RunVerifyPacking(*a); }; });
}

}  // namespace baton
