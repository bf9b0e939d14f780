// Which device a trainer process computes on, and how deterministically.
//
// train.device cuda gives each rank the GPU of its node-local rank (SLURM_LOCALID / LOCAL_RANK,
// modulo the GPUs it can see, so one GPU per task through CUDA_VISIBLE_DEVICES works too) and
// makes it the current CUDA device before anything allocates. train.deterministic asks libtorch
// for deterministic kernels only and cuBLAS for a fixed workspace: that is what makes a stopped
// and resumed GPU run end bit-identical; an op without a deterministic kernel then fails loudly
// instead of drifting. The CPU kernels baton uses are deterministic already.
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "schema/vocabularies.h"

namespace baton {

// The torch device for `device` (train.device); fails fast (config error, 78) when cuda is asked
// of a CPU build or of a machine where libtorch sees no GPU.
torch::Device SelectDevice(Device device, int64_t local_rank);

// Turns libtorch's deterministic algorithms on (and cuDNN's autotuning off); sets
// CUBLAS_WORKSPACE_CONFIG=:4096:8 unless the environment already chose one. Call before the
// first CUDA kernel runs: cuBLAS reads the variable when it creates its handle.
void ApplyDeterminism(bool deterministic);

}  // namespace baton
