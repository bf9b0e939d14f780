#include "trainer/train/device_memory.h"

#include <sys/resource.h>

#include <cstdio>
#include <string>

#ifdef BATON_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace baton {

int64_t PeakRssBytes() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return int64_t(ru.ru_maxrss) * 1024;
}

namespace {
#ifdef BATON_CUDA
c10::DeviceIndex Index(const torch::Device& device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}
// Element 0 of every allocator statistic is the aggregate over both pools (StatType::AGGREGATE,
// whose namespace moved between libtorch releases; its value did not).
constexpr size_t kAggregate = 0;
#endif

// The allocator's peak of allocated (`reserved` false) or reserved bytes on a CUDA device; the
// process's peak resident set otherwise.
int64_t Peak(const torch::Device& device, bool reserved) {
#ifdef BATON_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(Index(device));
    return (reserved ? stats.reserved_bytes : stats.allocated_bytes)[kAggregate].peak;
  }
#endif
  (void)reserved;
  return PeakRssBytes();
}
}  // namespace

int64_t DevicePeakBytes(const torch::Device& device) { return Peak(device, false); }

int64_t DevicePeakReservedBytes(const torch::Device& device) { return Peak(device, true); }

void ResetDevicePeak(const torch::Device& device) {
#ifdef BATON_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(Index(device));
#endif
}

void SynchronizeDevice(const torch::Device& device) {
#ifdef BATON_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#endif
}

std::string DeviceDescription(const torch::Device& device) {
#ifdef BATON_CUDA
  if (device.is_cuda()) {
    const c10::DeviceIndex i = Index(device);
    // Through libtorch (not the CUDA runtime directly), so nothing beyond libtorch is linked.
    if (const cudaDeviceProp* prop = at::cuda::getDeviceProperties(i)) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "cuda:%d %s (%.1f GiB, sm_%d%d)", int(i), prop->name,
                    double(prop->totalGlobalMem) / double(1ull << 30), prop->major, prop->minor);
      return buf;
    }
    return "cuda:" + std::to_string(int(i));
  }
#endif
  return device.str();
}

}  // namespace baton
