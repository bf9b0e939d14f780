// Memory and timing on the device a run uses, the same calls for CPU and CUDA: the peak bytes a
// step took (CUDA: the caching allocator's peak of allocated bytes; CPU: the process's peak
// resident set, which never goes down) and a device barrier before a host clock is read (CUDA
// kernels run asynchronously). Only this unit includes CUDA headers, and only in a CUDA build
// (BATON_CUDA), so the CPU build and its tests never see them.
#pragma once

#include <cstdint>
#include <string>

#include <torch/torch.h>

namespace baton {

// Peak resident set size of this process, bytes (never goes down).
int64_t PeakRssBytes();

// Peak bytes since the last ResetDevicePeak on a CUDA device; the process's peak resident set
// on the CPU.
int64_t DevicePeakBytes(const torch::Device& device);

// Bytes the CUDA caching allocator holds from the driver at its peak (allocated plus cached
// blocks: what nvidia-smi would show); the peak resident set on the CPU.
int64_t DevicePeakReservedBytes(const torch::Device& device);

// Starts a new peak on a CUDA device; nothing on the CPU (the resident peak cannot be reset).
void ResetDevicePeak(const torch::Device& device);

// Waits for every kernel queued on a CUDA device; nothing on the CPU.
void SynchronizeDevice(const torch::Device& device);

// "cpu", or "cuda:0 NVIDIA H200 (139.8 GiB)": what a report names as the device.
std::string DeviceDescription(const torch::Device& device);

}  // namespace baton
