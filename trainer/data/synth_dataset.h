// Synthetic datasets with learnable structure, for tests, benchmarks and the demo.
//
// Each episode shows a few Gaussian blobs on an H x W latent grid, each with its own colour
// (a C-vector). The actions are the blobs' velocities per sub-step; the latents of frame f are
// the blobs drawn where those velocities moved them, so the next latent is predictable from the
// current one and the actions, and the text embedding is a fixed projection of the colours.
// Unused action channels are zero and masked. Lengths are uniform in [min_frames, max_frames]
// latent frames (by default 103-362, the reference dataset's range in docs/design.md); episode 0
// is the shortest, 1 the longest.
// Deterministic in the seed (counter-based streams, one per episode).
#pragma once

#include <cstdint>
#include <string>

#include "schema/status.h"
#include "trainer/data/dataset_index.h"

namespace baton {

struct SynthOptions {
  std::string out;
  int64_t episodes = 64;
  uint64_t seed = 0;
  int64_t min_frames = 103;
  int64_t max_frames = 362;
  // ~40 tokens per latent frame with patch 2: 2 * (8/2 * 8/2 + 4), as in the reference dataset
  // (docs/design.md).
  DatasetShape shape{/*channels=*/4,     /*height=*/8,   /*width=*/8,
                     /*action_dim=*/8,
                     /*action_steps=*/4, /*text_len=*/4, /*text_dim=*/16};
  int64_t blobs = 2;
  bool overwrite = false;
};

// Writes episodes, then meta/info.json, then meta/episodes.jsonl last (atomically), so a
// half-written dataset has no index and is never mistaken for a whole one.
Status WriteSynthDataset(const SynthOptions& options);

}  // namespace baton
