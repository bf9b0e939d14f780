#include "trainer/tools/version_text.h"

#include <torch/torch.h>
#include <torch/version.h>

#ifdef BATON_CUDA
#include <cuda_runtime_api.h>
#endif

#include "schema/build_info.h"

namespace baton {

std::string TrainerVersionText() {
  std::string out = VersionText("baton-train") + "\nlibtorch " + TORCH_VERSION + "\n";
#ifdef BATON_CUDA
  // CUDART_VERSION is major * 1000 + minor * 10: 12010 is 12.1.
  out += "CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
         std::to_string(CUDART_VERSION % 1000 / 10) + " (runtime built against), " +
         std::to_string(torch::cuda::device_count()) + " device(s) visible";
#else
  out += "CUDA none (a CPU build)";
#endif
  return out;
}

}  // namespace baton
