// The throughput case: training tokens/s of the trainer's own optimizer step (TrainStepper) at
// several micro-batch sizes over the same episodes and model, on the run config's device and
// dtype (bfloat16: float32 master weights under bf16 autocast, as training), timed in turns with
// a GEMM of the device's matmul dtype; the model FLOPs per valid token, and from them the
// achieved FLOP/s and, against a given peak, the model-FLOP utilisation; the peak device memory
// of a step; the attention ops per layer (the packing's point: they do not grow with samples).
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench/bench_cases.h"
#include "bench/bench_common.h"
#include "bench/op_profile.h"
#include "schema/run_config.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/empty_text.h"
#include "trainer/data/episode_reader.h"
#include "trainer/data/pad_collate.h"
#include "trainer/distributed/process_group.h"
#include "trainer/model/attention.h"
#include "trainer/model/op_counter.h"
#include "trainer/objective/flow_matching.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/torch_dtype.h"
#include "trainer/train/train_step.h"

namespace baton::bench {
namespace {

// Linear-layer FLOPs per token of one training step (forward 2, backward 4 per weight): the
// token-wise weights (blocks, time projection, time MLP, in/out layers) from the model dims.
double DenseFlopsPerToken(const ModelDims& d) {
  const double D = double(d.dim), F = double(d.ffn_dim);
  const double block = 4 * D * D + 2 * D * D + 2 * D * F;            // self q k v o, cross q o, FFN
  const double shared = 6 * D * D + double(d.freq_dim) * D + D * D;  // time projection, time MLP
  const double io = double(d.channels * d.patch * d.patch) * D;      // in + out, about
  return 6.0 * (double(d.layers) * block + shared + io);
}

// Top-level ops of one layer's attention (self + text cross), forward and backward, for a row,
// on the device the model runs on and with the model's attention recomputation setting.
int64_t AttentionOpsPerLayer(const MicroBatch& mb, const ModelDims& d,
                             const torch::Device& device) {
  const int64_t T = mb.layout.tokens, H = d.heads, hd = d.head_dim();
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device).requires_grad(true);
  auto q = torch::randn({T, H, hd}, opts), k = torch::randn({T, H, hd}, opts),
       v = torch::randn({T, H, hd}, opts);
  auto ck = torch::randn({mb.layout.batch, mb.inputs.text.size(1), H, hd}, opts);
  OpCounter counter;
  auto out = BlockSparseAttention(q, k, v, mb.layout_tensors, d.recompute_attention_entries) +
             TextCrossAttention(q, ck, ck, mb.layout_tensors);
  out.sum().backward();
  SynchronizeDevice(device);
  return counter.ops();
}

struct Case {
  int64_t batch = 1;
  std::vector<PaddedBatch> micro;
  nlohmann::ordered_json json;
  std::vector<double> seconds;  // one per timed step
  int64_t peak = 0, peak_reserved = 0;
};

}  // namespace

// Each batch size over the same episodes and the same model, timed in turns (one step of each
// per round, then the GEMM), so load that comes and goes during the run hits every case alike.
// One JSON line per batch size, then the GEMM's (none with --reps 0: the plan figures only).
int RunThroughput(const ThroughputOptions& o) {
  auto config = LoadRunConfig(o.config);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return kExitConfig;
  }
  const auto device =
      ResolveDevice(o.device.empty() ? std::string(Name(config->train.device)) : o.device);
  if (!device) return kExitConfig;
  const torch::Dtype dtype = TorchDtype(config->train.dtype);
  // bf16 keeps float32 master weights and inputs; autocast does the bf16 compute.
  const torch::Dtype master = dtype == torch::kBFloat16 ? torch::kFloat32 : dtype;
  auto index = LoadDatasetIndex(config->data.path);
  if (!index.ok()) {
    std::fprintf(stderr, "%s\n", index.status().ToString().c_str());
    return kExitData;
  }
  if (o.episodes < 1 || o.episodes > int64_t(index->episodes.size())) {
    std::fprintf(stderr, "baton-bench-trainer: --episodes %lld: %s has %zu episodes\n",
                 (long long)o.episodes, config->data.path.c_str(), index->episodes.size());
    return kExitUsage;
  }
  std::vector<EpisodeData> eps;
  for (int64_t i = 0; i < o.episodes; ++i) {
    auto e = ReadEpisode(*index, i);
    if (!e.ok()) {
      std::fprintf(stderr, "%s\n", e.status().ToString().c_str());
      return kExitData;
    }
    eps.push_back(std::move(e).value());
  }
  double frames = 0;
  for (const auto& e : eps) frames += double(e.frames);
  // Batches of similar lengths, as the length-bucketing sampler forms them in training: packing
  // episodes of any lengths would pad every row to its longest one.
  std::stable_sort(eps.begin(), eps.end(),
                   [](const EpisodeData& a, const EpisodeData& b) { return a.frames < b.frames; });
  // The dataset's empty prompt, for text dropout, as training reads it.
  torch::Tensor empty_text;
  if (config->objective.text_dropout > 0) {
    auto text = ReadEmptyText(index->dir, eps[0].shape);
    if (!text.ok()) {
      std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
      return kExitData;
    }
    empty_text = torch::from_blob(text->data(), {eps[0].shape.text_len, eps[0].shape.text_dim},
                                  torch::kFloat32)
                     .clone();
  }
  // The GEMM in the device's training matmul dtype: bf16 tensor cores on a GPU running bf16;
  // float32 on the CPU, where a bf16 mm is no peak of anything.
  const torch::Dtype gemm_dtype =
      device->is_cuda() && dtype == torch::kBFloat16 ? torch::kBFloat16 : torch::kFloat32;
  nlohmann::ordered_json failed{{"case", "throughput"}, {"config", o.config}};
  try {
    torch::manual_seed(0);
    VideoActionModel model(MakeModelDims(config.value(), eps[0].shape));
    model->to(*device, master);
    AdamW opt(TrainableParameters(model), config->optim);
    auto group = ProcessGroupHandle::Create(DistEnv{}, device->is_cuda());
    TrainStepper stepper(model, &opt, group.get(), config.value(), eps[0].shape, dtype, *device,
                         empty_text);
    const ModelDims dims = model->dims();

    std::vector<Case> cases;
    for (const int64_t batch : o.batches) {
      failed["batch"] = batch;
      Case c;
      c.batch = batch;
      for (int64_t m = 0; m < o.episodes / batch; ++m) {
        c.micro.push_back(PadCollate({eps.begin() + m * batch, eps.begin() + (m + 1) * batch},
                                     config->data.pad_multiple));
      }
      // Model FLOPs per valid token: the linear layers from the dims (padded tokens are work but
      // not counted), plus the attention's allowed score entries (q k^T and p v, forward and
      // backward), with the draws of step 1.
      double allowed = 0;
      int64_t ops = 0, calls = 0, computed = 0, valid = 0, padded = 0;
      for (const auto& b : c.micro) {
        const MicroBatch mb =
            PrepareMicroBatch(b, uint64_t(config->run.seed), 1, eps[0].shape, config->objective,
                              dims, master, *device, empty_text);
        allowed += double(AllowedPairs(mb.layout_tensors));
        computed += mb.layout_tensors.computed_pairs;
        calls += int64_t(mb.layout_tensors.calls.size());
        if (o.op_count) ops += AttentionOpsPerLayer(mb, dims, *device);
        valid += mb.tokens;
        padded += mb.padded_tokens;
      }
      const double dense = DenseFlopsPerToken(dims);
      const double attention =
          allowed * double(dims.dim) * 2 * 2 * 3 * double(dims.layers) / double(valid);
      c.json = {{"case", "throughput"},
                {"device", DeviceDescription(*device)},
                {"dtype", DtypeName(dtype)},
                {"batch", batch},
                {"micro_batches", c.micro.size()},
                {"episodes", o.episodes},
                {"dim", dims.dim},
                {"layers", dims.layers},
                {"valid_tokens", valid},
                {"padded_tokens", padded},
                {"flops_per_token", dense + attention},
                {"attention_flops_per_token", attention}};
      if (o.op_count) c.json["attention_ops_per_layer"] = ops;
      c.json["attention_calls_per_layer"] = calls;
      c.json["computed_pairs"] = computed;
      c.json["allowed_pairs"] = allowed;
      c.json["threads"] = torch::get_num_threads();
      cases.push_back(std::move(c));
    }
    failed.erase("batch");

    const int64_t g = o.gemm_n;
    std::vector<double> gemm_s;
    if (o.reps > 0) {  // warm-up: allocator, kernels, thread pool, AdamW state
      for (auto& c : cases) {
        failed["batch"] = c.batch;
        TimeOnDevice(*device, [&] { stepper.Step(c.micro, 0, frames, 0.0, false); });
      }
      failed.erase("batch");
      TimeOneGemm(g, g, g, *device, gemm_dtype);
    }
    for (int64_t r = 0; r < o.reps; ++r) {
      for (auto& c : cases) {
        failed["batch"] = c.batch;
        // Per step, as the cases run in turns: a case's peak is its own steps' (on the CPU the
        // resident peak never goes down, so it is the process's so far).
        ResetDevicePeak(*device);
        c.seconds.push_back(
            TimeOnDevice(*device, [&] { stepper.Step(c.micro, r + 1, frames, 0.0, false); }));
        c.peak = std::max(c.peak, DevicePeakBytes(*device));
        c.peak_reserved = std::max(c.peak_reserved, DevicePeakReservedBytes(*device));
      }
      failed.erase("batch");
      gemm_s.push_back(TimeOneGemm(g, g, g, *device, gemm_dtype));
    }
    for (auto& c : cases) {
      c.json["reps"] = o.reps;
      if (o.reps > 0) {
        const double valid = c.json["valid_tokens"].get<double>();
        const double best = Best(c.seconds), median = Median(c.seconds);
        const double achieved = c.json["flops_per_token"].get<double>() * valid / best;
        c.json["best_step_seconds"] = best;
        c.json["step_seconds_median"] = median;
        c.json["tokens_per_s"] = valid / best;
        c.json["tokens_per_s_median"] = valid / median;
        c.json["achieved_flops_per_s"] = achieved;
        if (o.peak_tflops > 0) c.json["mfu"] = achieved / (o.peak_tflops * 1e12);
        c.json["peak_bytes"] = c.peak;
        c.json["peak_reserved_bytes"] = c.peak_reserved;
      }
      if (o.profile) {
        OpProfile prof;
        const double s =
            TimeOnDevice(*device, [&] { stepper.Step(c.micro, o.reps + 1, frames, 0.0, false); });
        c.json["profile"] = prof.Top(s, 12);
      }
      PrintJson(c.json);
    }
    if (o.reps > 0) PrintJson(GemmJson(g, g, g, *device, gemm_dtype, gemm_s));
    return 0;
  } catch (const c10::Error& e) {
    if (!IsOutOfMemory(e)) throw;
    return ReportOutOfMemory(failed, *device, dtype);
  }
}

}  // namespace baton::bench
