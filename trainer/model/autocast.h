// bf16 compute with fp32 master weights: an RAII switch for libtorch's autocast.
//
// With train.dtype bfloat16 the parameters, gradients and AdamW state stay float32; inside this
// guard matmuls and linears run in bfloat16 (CUDA or CPU autocast), everything else in float32.
// The autocast API moved between libtorch releases, so the version guard lives here only.
// Scoped to the thread that creates it.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace baton {

// Whether an AutocastBf16 is in force on this thread (CPU or CUDA): the model then rounds its
// inputs to bfloat16 explicitly, as upstream's training does.
inline bool AutocastBf16Active() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(at::kCPU) ||
         at::autocast::is_autocast_enabled(at::kCUDA);
#else
  return at::autocast::is_cpu_enabled() || at::autocast::is_enabled();
#endif
}

class AutocastBf16 {
 public:
  AutocastBf16(bool enabled, bool cuda) : enabled_(enabled), cuda_(cuda) {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    const auto device = cuda_ ? at::kCUDA : at::kCPU;
    at::autocast::set_autocast_dtype(device, at::kBFloat16);
    at::autocast::set_autocast_enabled(device, true);
#else
    if (cuda_) {
      at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
      at::autocast::set_enabled(true);
    } else {
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::set_cpu_enabled(true);
    }
#endif
  }
  ~AutocastBf16() {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(cuda_ ? at::kCUDA : at::kCPU, false);
#else
    if (cuda_) {
      at::autocast::set_enabled(false);
    } else {
      at::autocast::set_cpu_enabled(false);
    }
#endif
    at::autocast::clear_cache();
  }
  AutocastBf16(const AutocastBf16&) = delete;
  AutocastBf16& operator=(const AutocastBf16&) = delete;

 private:
  bool enabled_, cuda_;
};

}  // namespace baton
