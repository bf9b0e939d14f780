// What every case of baton-bench-trainer shares: the device and dtype a case runs on (from the
// command line or the run config), time between device barriers (CUDA kernels run
// asynchronously, so a host clock read without one measures the launch, not the work), medians,
// one JSON object per output line, and the test that turns an allocation failure into a figure
// (a case that does not fit is a result, not a crash). Header-only; the cases own their tensors.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/exit_codes.h"
#include "schema/vocabularies.h"
#include "trainer/train/device_memory.h"

namespace baton::bench {

using Clock = std::chrono::steady_clock;

// A case that ran out of device (or host) memory: its JSON line says so and the process exits 3.
inline constexpr int kExitOutOfMemory = 3;

inline double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Seconds fn() takes on `device`, between two barriers.
template <typename Fn>
double TimeOnDevice(const torch::Device& device, Fn&& fn) {
  SynchronizeDevice(device);
  const auto t0 = Clock::now();
  fn();
  SynchronizeDevice(device);
  return Since(t0);
}

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline double Best(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

inline std::string LibtorchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// "cpu" or "cuda" as a device; nullopt, with one line on stderr, when this binary or this
// machine cannot run CUDA (the caller exits kExitConfig).
inline std::optional<torch::Device> ResolveDevice(const std::string& name) {
  const Result<Device> device = Parse<Device>(name);
  if (device.ok() && device.value() == Device::kCpu) return torch::Device(torch::kCPU);
  if (!device.ok()) {
    std::fprintf(stderr, "baton-bench-trainer: unknown device '%s' (cpu or cuda)\n", name.c_str());
    return std::nullopt;
  }
#ifndef BATON_CUDA
  std::fprintf(stderr,
               "baton-bench-trainer: --device cuda needs a CUDA build (configure with "
               "-DBATON_CUDA=ON against a CUDA libtorch); this one is CPU-only, libtorch %s\n",
               LibtorchVersion().c_str());
  return std::nullopt;
#else
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr,
                 "baton-bench-trainer: --device cuda: no CUDA device is visible to libtorch %s "
                 "(check CUDA_VISIBLE_DEVICES and the driver)\n",
                 LibtorchVersion().c_str());
    return std::nullopt;
  }
  return torch::Device(torch::kCUDA, 0);
#endif
}

inline torch::Dtype DtypeFromName(const std::string& name) {
  if (name == "bfloat16") return torch::kBFloat16;
  if (name == "float64") return torch::kFloat64;
  return torch::kFloat32;
}

inline const char* DtypeName(torch::Dtype dtype) {
  return dtype == torch::kBFloat16 ? "bfloat16" : dtype == torch::kFloat64 ? "float64" : "float32";
}

// An allocation the device (or the host) refused. CUDA's caching allocator throws
// c10::OutOfMemoryError; the CUDA runtime, cuBLAS (its workspace) and the CPU allocator a
// c10::Error saying so in their own words.
inline bool IsOutOfMemory(const c10::Error& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) return true;
  const std::string what = e.what();
  for (const char* words :
       {"out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "can't allocate memory"}) {
    if (what.find(words) != std::string::npos) return true;
  }
  return false;
}

inline void PrintJson(const nlohmann::ordered_json& j) {
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

// What a case prints when the device ran out of memory: its own fields (what it was running),
// then the error, the device, the dtype and the peak it reached. Returns the case's exit code.
inline int ReportOutOfMemory(nlohmann::ordered_json j, const torch::Device& device,
                             torch::Dtype dtype) {
  j["error"] = "out of memory";
  j["device"] = DeviceDescription(device);
  j["dtype"] = DtypeName(dtype);
  j["peak_bytes"] = DevicePeakBytes(device);
  PrintJson(j);
  return kExitOutOfMemory;
}

}  // namespace baton::bench
