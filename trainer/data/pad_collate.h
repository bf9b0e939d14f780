// pad_collate: a batch of episodes of different lengths -> padded tensors + valid_frames.
//
// F is padded to round_up(max F, pad_multiple) so the number of distinct shapes stays small (each
// is a recompile on GPU). Pad frames are zeros everywhere, including actions_mask, and
// valid_frames[b] tells the model and the loss where each episode really ends. Includes
// libtorch; the reading itself (episode_reader) does not. Thread-safe (pure).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "trainer/data/episode_reader.h"

namespace baton {

struct PaddedBatch {
  torch::Tensor latents;          // [B, C, Fp, H, W] float32
  torch::Tensor actions;          // [B, A, Fp, N]
  torch::Tensor actions_mask;     // [B, A, Fp, N], 0 on pad frames and unused channels
  torch::Tensor text;             // [B, L, Dt]
  torch::Tensor valid_frames;     // [B] int64
  std::vector<int64_t> episodes;  // dataset indices, in batch order
  int64_t padded_frames = 0;      // Fp
};

// All episodes must share a DatasetShape (ReadEpisode checks them against the index).
PaddedBatch PadCollate(const std::vector<EpisodeData>& episodes, int64_t pad_multiple);

}  // namespace baton
