// The attention case: one masked self-attention forward + backward over a packed row of T
// tokens by one of three paths on the same q, k, v and the same mask rule: the block-sparse
// production path (sparse), the dense T x T oracle (dense), and torch's
// scaled_dot_product_attention with the oracle's boolean mask (sdpa, libtorch >= 2). Time,
// peak memory, score entries computed vs allowed, and on request (--check) the output's error
// against a float64 reference: the block-sparse path in float64 on the same q, k, v (exact to
// ~1e-16 against the dense oracle, tests/unit/attention_test.cc), normwise over the whole
// output, beside its bound from the dtype's unit roundoff and the reductions
// (trainer/train/rounding_bound.h).
#include <torch/torch.h>
#include <torch/version.h>

#include <string>
#include <vector>

#include "bench/bench_cases.h"
#include "bench/bench_common.h"
#include "trainer/model/attention.h"
#include "trainer/model/autocast.h"
#include "trainer/model/packed_layout.h"
#include "trainer/train/rounding_bound.h"
#include "trainer/train/train_step.h"

namespace baton::bench {
namespace {

// q, k, v [T, H, D] -> [T, H, D] by `path`; `mask` is the oracle's [T, T] on the device (dense
// and sdpa only).
torch::Tensor Forward(const std::string& path, const torch::Tensor& q, const torch::Tensor& k,
                      const torch::Tensor& v, const LayoutTensors& lt, const torch::Tensor& mask) {
  if (path == "sparse") return BlockSparseAttention(q, k, v, lt);
  if (path == "dense") return DenseMaskedAttention(q, k, v, mask);
#if TORCH_VERSION_MAJOR >= 2
  // Head-major [1, H, T, D] views; a true entry of a boolean mask takes part in the attention.
  auto heads = [](const torch::Tensor& x) { return x.transpose(0, 1).unsqueeze(0); };
  auto out = at::scaled_dot_product_attention(heads(q), heads(k), heads(v), mask);
  return out.squeeze(0).transpose(0, 1);
#else
  TORCH_CHECK(false, "sdpa needs libtorch >= 2");
#endif
}

// max |out - ref| / max |ref|, in float64.
double MaxRelDiff(const torch::Tensor& out, const torch::Tensor& ref) {
  auto o = out.to(torch::kFloat64), r = ref.to(torch::kFloat64);
  return (o - r).abs().max().item<double>() / r.abs().max().item<double>();
}

// ||out - ref|| / ||ref|| over the whole tensor, in float64.
double NormRelErr(const torch::Tensor& out, const torch::Tensor& ref) {
  auto o = out.to(torch::kFloat64), r = ref.to(torch::kFloat64);
  return (o - r).norm().item<double>() / r.norm().item<double>();
}

}  // namespace

int RunAttention(const AttentionOptions& o) {
  const auto device = ResolveDevice(o.device);
  if (!device) return kExitConfig;
  if (o.path == "sdpa" && TORCH_VERSION_MAJOR < 2) {
    std::fprintf(stderr,
                 "baton-bench-trainer: --path sdpa needs libtorch >= 2 "
                 "(scaled_dot_product_attention); this binary is built against libtorch %s\n",
                 LibtorchVersion().c_str());
    return kExitUnavailable;
  }
  const torch::Dtype dtype = DtypeFromName(o.dtype);
  const bool bf16 = dtype == torch::kBFloat16;
  // Rows like the reference dataset's (docs/design.md): 4 samples, 16 patches + 4 action
  // sub-steps per frame (40 tokens a frame).
  const int64_t per_frame = 2 * (16 + 4), B = 4;
  const int64_t F = std::max<int64_t>(1, o.tokens / (per_frame * B));
  std::vector<SampleSpec> specs(B, {F, o.chunk, o.window});
  const PackedLayout layout = BuildPackedLayout(F, 4, 4, 4, specs);
  const int64_t T = layout.tokens, H = o.heads, hd = o.head_dim;
  nlohmann::ordered_json j{{"case", "attention"}, {"path", o.path}, {"tokens", T}};
  try {
    torch::manual_seed(0);
    // bf16 as training runs it: q, k, v come out of autocast's bf16 linears, the layout's tensors
    // are float32 (PrepareMicroBatch's), the attention runs under autocast.
    auto opts = torch::TensorOptions().dtype(dtype).device(*device).requires_grad(true);
    auto q = torch::randn({T, H, hd}, opts), k = torch::randn({T, H, hd}, opts),
         v = torch::randn({T, H, hd}, opts);
    // The T x T mask first: where it cannot be allocated, the case fails before the slower plan.
    torch::Tensor mask;
    double mask_s = 0;
    if (o.path != "sparse") {
      mask_s = TimeOnDevice(*device, [&] { mask = DenseAttentionMask(layout).to(*device); });
    }
    const torch::Dtype layout_dtype = bf16 ? torch::kFloat32 : dtype;
    LayoutTensors lt;
    const double plan_s = TimeOnDevice(
        *device, [&] { lt = MakeLayoutTensors(layout, hd, 10000.0, *device, layout_dtype); });
    const int64_t allowed = AllowedPairs(lt);
    const int64_t computed = o.path == "sparse" ? lt.computed_pairs : T * T;

    torch::Tensor last;  // --check: the last timed forward's output
    auto run = [&](double* fwd_s, double* total_s) {
      last = torch::Tensor();
      for (auto* x : {&q, &k, &v}) x->mutable_grad() = torch::Tensor();
      SynchronizeDevice(*device);
      const auto t0 = Clock::now();
      torch::Tensor out;
      {
        AutocastBf16 autocast(bf16, device->is_cuda());
        out = Forward(o.path, q, k, v, lt, mask);
      }
      SynchronizeDevice(*device);
      *fwd_s = Since(t0);
      out.sum().backward();
      SynchronizeDevice(*device);
      *total_s = Since(t0);
      if (o.check) last = out.detach();
    };
    double fwd = 0, total = 0;
    if (o.reps > 1) run(&fwd, &total);  // warm-up: allocator, kernels, BLAS handles
    ResetDevicePeak(*device);
    const int64_t rss0 = PeakRssBytes();
    const int64_t start_bytes = DevicePeakBytes(*device);
    std::vector<double> fwd_s, total_s;
    for (int64_t r = 0; r < o.reps; ++r) {
      run(&fwd, &total);
      fwd_s.push_back(fwd);
      total_s.push_back(total);
    }
    const int64_t peak = DevicePeakBytes(*device), peak_reserved = DevicePeakReservedBytes(*device);
    j["device"] = DeviceDescription(*device);
    j["dtype"] = DtypeName(dtype);
    j["heads"] = H;
    j["head_dim"] = hd;
    j["window"] = o.window;
    j["chunk"] = o.chunk;
    j["reps"] = o.reps;
    j["seconds"] = Median(total_s);
    j["forward_seconds"] = Median(fwd_s);
    j["best_seconds"] = Best(total_s);
    j["plan_seconds"] = plan_s;
    if (o.path != "sparse") j["mask_seconds"] = mask_s;
    // On CUDA: the allocator's peak over the timed calls, q, k, v, the plan and the mask
    // included (start_bytes: what was allocated before them); on the CPU: the process's peak RSS.
    j["peak_bytes"] = peak;
    j["peak_reserved_bytes"] = peak_reserved;
    j["start_bytes"] = start_bytes;
    if (!device->is_cuda()) {
      j["peak_rss_bytes"] = PeakRssBytes();
      j["rss_growth_bytes"] = PeakRssBytes() - rss0;
    }
    j["computed_pairs"] = computed;
    j["allowed_pairs"] = allowed;
    j["calls"] = o.path == "sparse" ? int64_t(lt.calls.size()) : int64_t(1);
    if (o.check) {
      torch::NoGradGuard no_grad;
      // The reference computes exactly what the path computes, on the same (already rounded)
      // inputs, in float64: its error is the path's rounding alone.
      const LayoutTensors lt64 = MakeLayoutTensors(layout, hd, 10000.0, *device, torch::kFloat64);
      auto up = [](const torch::Tensor& x) { return x.detach().to(torch::kFloat64); };
      const torch::Tensor ref = BlockSparseAttention(up(q), up(k), up(v), lt64);
      int64_t max_keys = 0;
      for (const auto& c : lt.calls) max_keys = std::max(max_keys, c.lk);
      // The chain: q.k over head_dim, softmax over at most max_keys keys, p.v over as many;
      // the scores, the probabilities and the output each stored once in the dtype.
      j["unit_roundoff"] = UnitRoundoff(DtypeName(dtype));
      j["accumulation_roundoff"] = AccumulationRoundoff(DtypeName(dtype));
      j["max_keys"] = max_keys;
      j["rel_err"] = NormRelErr(last, ref);
      j["rel_err_bound"] = RoundingBound(DtypeName(dtype), {hd, max_keys, max_keys}, 3);
      j["max_rel_diff"] = MaxRelDiff(last, ref);
    }
    PrintJson(j);
    return 0;
  } catch (const c10::Error& e) {
    if (!IsOutOfMemory(e)) throw;
    j["heads"] = H;
    j["head_dim"] = hd;
    return ReportOutOfMemory(j, *device, dtype);
  }
}

}  // namespace baton::bench
