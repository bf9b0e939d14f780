// ReadEpisode: one episode's tensors from its safetensors file, checked against the index.
//
// Returns plain float buffers (no libtorch) so the reading can run on the loader's background
// thread and be unit-tested fast; pad_collate turns a batch of them into tensors. Every problem
// — missing file, truncated file, corrupt header, wrong shape, F that disagrees with n_video, a
// NaN or Inf in any tensor —
// is a Code::kData / kNotFound Status naming the file (exit 65), never a crash or a skip.
// Thread-safe (reads only).
#pragma once

#include <cstdint>
#include <vector>

#include "schema/status.h"
#include "trainer/data/dataset_index.h"

namespace baton {

struct EpisodeData {
  int64_t index = -1;  // position in the dataset index
  int64_t frames = 0;  // F
  DatasetShape shape;
  std::vector<float> latents;       // [C, F, H, W]
  std::vector<float> actions;       // [A, F, N]
  std::vector<float> actions_mask;  // [A, F, N], 1 where the channel is used
  std::vector<float> text;          // [L, Dt]
};

Result<EpisodeData> ReadEpisode(const DatasetIndex& index, int64_t i);

}  // namespace baton
