// A tiny float64 model and dataset for the trainer's numerical tests, and the device they run
// on: the CPU, or with BATON_TEST_DEVICE=cuda the GPU (the CUDA variants that
// scripts/gpu_check.sh runs). Inputs are drawn on the CPU and moved, so both devices see the
// same numbers.
#pragma once

#include <torch/torch.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "schema/run_config.h"
#include "tests/common/temp_dir.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/empty_text_tensor.h"
#include "trainer/data/episode_reader.h"
#include "trainer/data/synth_dataset.h"
#include "trainer/model/video_action_model.h"
#include "trainer/train/device_select.h"

namespace baton::test {

// BATON_TEST_DEVICE: unset or "cpu", or "cuda" (fails every test that asks when libtorch sees no
// GPU, rather than quietly testing the CPU twice).
inline torch::Device TestDevice() {
  const char* v = std::getenv("BATON_TEST_DEVICE");
  const std::string name = v == nullptr ? Name(Device::kCpu) : v;
  const Result<Device> device = Parse<Device>(name);
  if (device.ok() && device.value() == Device::kCpu) return torch::Device(torch::kCPU);
  if (device.ok()) {
    if (!torch::cuda::is_available()) {
      throw std::runtime_error(
          "BATON_TEST_DEVICE=cuda but libtorch sees no GPU (or was built without CUDA)");
    }
    // The bitwise checks hold on a GPU only with deterministic kernels, as train.deterministic
    // gives a run; set before the first kernel (cuBLAS reads its workspace setting then).
    static const bool deterministic = (ApplyDeterminism(true), true);
    (void)deterministic;
    return torch::Device(torch::kCUDA, 0);
  }
  throw std::runtime_error("BATON_TEST_DEVICE must be cpu or cuda, got '" + name + "'");
}

// A float64 leaf with the CPU generator's values, on the test device.
inline torch::Tensor Leaf(std::vector<int64_t> shape) {
  return torch::randn(shape, torch::kFloat64).to(TestDevice()).requires_grad_(true);
}

struct TinyTrainer {
  TempDir tmp;
  DatasetIndex index;
  RunConfig config;
  ModelDims dims;
  torch::Tensor empty_text;  // [L, Dt] the dataset's empty prompt (text dropout)

  explicit TinyTrainer(int64_t episodes = 16, int64_t min_frames = 3, int64_t max_frames = 9) {
    SynthOptions o;
    o.out = tmp / "ds";
    o.episodes = episodes;
    o.seed = 21;
    o.min_frames = min_frames;
    o.max_frames = max_frames;
    o.shape = {/*channels=*/2,   /*height=*/4,       /*width=*/4,
               /*action_dim=*/4, /*action_steps=*/2,
               /*text_len=*/3,   /*text_dim=*/8};
    if (!WriteSynthDataset(o).ok()) std::abort();
    index = LoadDatasetIndex(o.out).value();
    config.data.path = o.out;
    config.data.pad_multiple = 4;
    config.run.seed = 5;
    config.run.steps = 10;
    config.objective.chunk_min = 1;
    config.objective.chunk_max = 3;
    config.objective.window_min = 1;
    config.objective.window_max = 5;
    config.optim.lr = 1e-3;
    config.optim.warmup_steps = 0;
    // Half the texts dropped: the exactness checks cover the dropout draws too.
    config.objective.text_dropout = 0.5;
    empty_text = EmptyTextTensor(config.objective.text_dropout, o.out, *index.shape);
    dims.channels = 2;
    dims.patch = 2;
    dims.action_dim = 4;
    dims.action_steps = 2;
    dims.text_dim = 8;
    dims.dim = 24;
    dims.heads = 2;
    dims.layers = 2;
    dims.ffn_dim = 48;
    dims.freq_dim = 16;
    dims.zero_init = false;
  }

  VideoActionModel Model(uint64_t seed = 3) {
    torch::manual_seed(seed);
    VideoActionModel m(dims);
    m->to(TestDevice(), torch::kFloat64);
    return m;
  }

  std::vector<EpisodeData> Episodes(std::vector<int64_t> ids) {
    std::vector<EpisodeData> out;
    for (int64_t i : ids) out.push_back(ReadEpisode(index, i).value());
    return out;
  }
};

}  // namespace baton::test
