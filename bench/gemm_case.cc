// The gemm case: torch::mm FLOP/s of one shape on the bench device, float32 or bfloat16; the
// matmul peak the throughput case's achieved FLOP/s is read against (and the GEMM it times in
// turns with its training steps).
#include <torch/torch.h>

#include <vector>

#include "bench/bench_cases.h"
#include "bench/bench_common.h"

namespace baton::bench {

double TimeOneGemm(int64_t m, int64_t k, int64_t n, const torch::Device& device,
                   torch::Dtype dtype) {
  auto opts = torch::TensorOptions().dtype(dtype).device(device);
  auto a = torch::randn({m, k}, opts), b = torch::randn({k, n}, opts);
  torch::Tensor c;
  return TimeOnDevice(device, [&] { c = torch::mm(a, b); });
}

nlohmann::ordered_json GemmJson(int64_t m, int64_t k, int64_t n, const torch::Device& device,
                                torch::Dtype dtype, const std::vector<double>& seconds) {
  const double best = Best(seconds);
  return {{"case", "gemm"},
          {"device", DeviceDescription(device)},
          {"dtype", DtypeName(dtype)},
          {"m", m},
          {"k", k},
          {"n", n},
          {"reps", seconds.size()},
          {"median_seconds", Median(seconds)},
          {"best_seconds", best},
          {"flops_per_s", 2.0 * double(m) * double(k) * double(n) / best},
          {"threads", torch::get_num_threads()}};
}

int RunGemm(const GemmOptions& o) {
  const auto device = ResolveDevice(o.device);
  if (!device) return kExitConfig;
  const torch::Dtype dtype = DtypeFromName(o.dtype);
  try {
    torch::manual_seed(0);
    auto opts = torch::TensorOptions().dtype(dtype).device(*device);
    auto a = torch::randn({o.m, o.k}, opts), b = torch::randn({o.k, o.n}, opts);
    torch::Tensor c;
    TimeOnDevice(*device, [&] { c = torch::mm(a, b); });  // warm-up (allocator, BLAS handles)
    std::vector<double> seconds;
    for (int64_t r = 0; r < o.reps; ++r) {
      seconds.push_back(TimeOnDevice(*device, [&] { c = torch::mm(a, b); }));
    }
    PrintJson(GemmJson(o.m, o.k, o.n, *device, dtype, seconds));
    return 0;
  } catch (const c10::Error& e) {
    if (!IsOutOfMemory(e)) throw;
    PrintJson({{"case", "gemm"},
               {"m", o.m},
               {"k", o.k},
               {"n", o.n},
               {"error", "out of memory"},
               {"device", DeviceDescription(*device)},
               {"dtype", DtypeName(dtype)}});
    return kExitOutOfMemory;
  }
}

}  // namespace baton::bench
