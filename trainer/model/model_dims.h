// ModelDims: the sizes of a VideoActionModel (video_action_model.h) and how it runs, as plain
// numbers. Torch-free, so that the code that reads or checks sizes without building a model (the
// upstream config.json reader, a version-1 checkpoint's config, the run's sizes from its config)
// needs no libtorch. A value type; thread-compatible.
#pragma once

#include <cstdint>

namespace baton {

struct ModelDims {
  int64_t channels = 4, patch = 2, action_dim = 8, action_steps = 4;
  int64_t text_dim = 16;
  int64_t dim = 64, heads = 4, layers = 2, ffn_dim = 256, freq_dim = 256;
  double rope_theta = 10000.0, eps = 1e-6;
  // adaLN-zero start (time projections and output layers at zero). Tests turn it off so every
  // parameter gets a non-zero gradient to compare.
  bool zero_init = true;
  // train.activation_checkpointing: blocks — each block is recomputed in backward (recompute.h).
  // How the model runs, not what it computes: checkpoints and exact resumes ignore it.
  bool recompute_blocks = false;
  // train.activation_checkpointing: blocks+attention — also each self-attention call, split to at
  // most this many score entries over all heads (kRecomputeCallEntries); 0 keeps the scores.
  int64_t recompute_attention_entries = 0;
  int64_t head_dim() const { return dim / heads; }
};

}  // namespace baton
