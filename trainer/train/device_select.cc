#include "trainer/train/device_select.h"

#include <cstdlib>
#include <string>

#include "schema/exit_codes.h"
#include "trainer/fail.h"

#ifdef BATON_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace baton {

torch::Device SelectDevice(Device device, int64_t local_rank) {
  if (device != Device::kCuda) return torch::Device(torch::kCPU);
#ifdef BATON_CUDA
  const int64_t n = int64_t(torch::cuda::device_count());
  if (n < 1) {
    BATON_FAIL(kExitConfig, "train.device is cuda but libtorch sees no GPU on this machine",
               "check CUDA_VISIBLE_DEVICES and the job's --gpus, or use train.device cpu");
  }
  const auto index = static_cast<c10::DeviceIndex>(local_rank % n);
  c10::cuda::set_device(index);
  return torch::Device(torch::kCUDA, index);
#else
  (void)local_rank;
  BATON_FAIL(kExitConfig, "train.device is cuda but this baton-train was built without CUDA",
             "rebuild with -DBATON_CUDA=ON against a CUDA libtorch");
#endif
}

void ApplyDeterminism(bool deterministic) {
  if (!deterministic) return;
  // ":4096:8" is one of the two settings cuBLAS documents as reproducible; a user's own choice
  // (e.g. ":16:8", smaller and slower) is kept.
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  at::globalContext().setDeterministicCuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
}

}  // namespace baton
