// Bytes per element of each kind of activation the memory plan (memory_plan.cc) counts, under a
// run's dtype and device. Private to the plan: pure arithmetic on PlanSettings, no state.
#pragma once

#include <cstdint>

#include "trainer/memory/memory_plan.h"

namespace baton {
namespace memory_plan_detail {

// The bytes per element each kind of activation takes under the settings' dtype and device.
struct ActivationWidths {
  bool bf16 = false;
  int64_t master = 4, a = 4, w = 4, rms = 8, probs = 4;
};

inline ActivationWidths WidthsFor(const PlanSettings& s) {
  ActivationWidths z;
  z.bf16 = s.dtype == DType::kBFloat16;
  z.master = s.dtype == DType::kFloat64 ? 8 : 4;
  // a: the activation dtype (bf16 under autocast); w: the "wide" dtype norms, modulation and
  // residual adds run in (float32 under bf16, as upstream does).
  z.a = z.bf16 ? 2 : z.master, z.w = z.master;
  // QK-RMSNorm keeps its input and its normalised product; softmax keeps its output. CUDA's
  // autocast runs pow and softmax in float32: RMSNorm also keeps pow's float32 copy and its
  // product is float32, and the matmul after the softmax keeps a bf16 copy of its float32
  // output. CPU autocast runs both in bf16.
  const bool fp32_ops = z.bf16 && s.cuda;
  z.rms = !z.bf16 ? 2 * z.master : fp32_ops ? z.a + 2 * z.w : 2 * z.a;
  z.probs = !z.bf16 ? z.master : fp32_ops ? z.w + z.a : z.a;
  return z;
}

}  // namespace memory_plan_detail
}  // namespace baton
