// The snapshot of an async save (save_phases.h, SnapshotSave): every tensor of a prepared save
// copied into host buffers kept from one save to the next, so the background write needs nothing
// of the live model or optimizer.
#include <torch/torch.h>

#include "trainer/ckpt/save_phases.h"

namespace baton {

int64_t SnapshotBytes(const PreparedSave& p) {
  int64_t n = 0;
  for (const auto& f : p.files) {
    for (const auto& t : f.tensors) {
      n +=
          t.tensor.numel() * int64_t(c10::elementSize(t.dtype ? *t.dtype : t.tensor.scalar_type()));
    }
  }
  return n;
}

void SnapshotSave(PreparedSave& p, SnapshotBuffers* buffers) {
  size_t k = 0;
  bool device = false;
  for (auto& f : p.files) {
    for (auto& t : f.tensors) {
      const torch::Dtype dtype = t.dtype ? *t.dtype : t.tensor.scalar_type();
      const bool on_device = t.tensor.device().type() != torch::kCPU;
      device = device || on_device;
      torch::Tensor* dst = k < buffers->tensors.size() ? &buffers->tensors[k] : nullptr;
      if (dst == nullptr || dst->sizes() != t.tensor.sizes() || dst->scalar_type() != dtype ||
          dst->is_pinned() != on_device) {
        // Pinned host memory lets the copy from the device run without a staging buffer.
        torch::Tensor fresh = torch::empty(
            t.tensor.sizes(), torch::TensorOptions().dtype(dtype).pinned_memory(on_device));
        if (dst == nullptr) {
          buffers->tensors.push_back(fresh);
          dst = &buffers->tensors.back();
        } else {
          *dst = fresh;
        }
      }
      dst->copy_(t.tensor, /*non_blocking=*/on_device);
      t.tensor = *dst;
      t.dtype = std::nullopt;
      ++k;
    }
  }
  buffers->tensors.resize(k);
  if (device) torch::cuda::synchronize();  // every non-blocking copy has landed
}

}  // namespace baton
