// VideoActionModel: the transformer of docs/model.md at any size — video patch tokens and action
// tokens with their own in/out layers and timestep embedders, shared adaLN-zero blocks with
// QK-RMSNorm across heads, 3-axis RoPE, per-token timesteps, per-sample text cross-attention.
//
// forward() takes one packed row (the micro-batch's episodes, see packed_layout.h) and returns
// the predictions for the noisy video and noisy action tokens, shaped like the inputs. The layout
// tensors are arguments, never state, so any number of forwards of any shapes may be in flight
// before their backwards. Owns its parameters; not thread-safe.
#pragma once

#include <torch/torch.h>

#include "trainer/model/attention.h"

namespace baton {

struct ModelDims {
  int64_t channels = 4, patch = 2, action_dim = 8, action_steps = 4;
  int64_t text_dim = 16;
  int64_t dim = 64, heads = 4, layers = 2, ffn_dim = 256, freq_dim = 256;
  double rope_theta = 10000.0, eps = 1e-6;
  // adaLN-zero start (time projection and output layers at zero). Tests turn it off so every
  // parameter gets a non-zero gradient to compare.
  bool zero_init = true;
  // train.activation_checkpointing: blocks — each block is recomputed in backward (recompute.h).
  // How the model runs, not what it computes: checkpoints and exact resumes ignore it.
  bool recompute_blocks = false;
  int64_t head_dim() const { return dim / heads; }
};

enum class AttentionPath { kBlockSparse, kDense };

struct ModelInputs {
  torch::Tensor video_noisy;    // [B, C, Fp, H, W]
  torch::Tensor video_clean;    // [B, C, Fp, H, W]
  torch::Tensor action_noisy;   // [B, A, Fp, N]
  torch::Tensor action_clean;   // [B, A, Fp, N]
  torch::Tensor t_video_noisy;  // [B, Fp] timesteps in [0, 1000]
  torch::Tensor t_video_clean;  // [B, Fp] (0 unless the clean copy was lightly noised)
  torch::Tensor t_action_noisy; // [B, Fp]
  torch::Tensor text;           // [B, L, Dt]
};

struct ModelOutputs {
  torch::Tensor video;   // [B, C, Fp, H, W] prediction at the noisy video tokens
  torch::Tensor action;  // [B, A, Fp, N] prediction at the noisy action tokens
  torch::Tensor hidden;  // [T, D] final hidden state of every token (for mask tests)
};

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::Tensor weight_;
  double eps_;
};
TORCH_MODULE(RMSNorm);

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const ModelDims& d);
  // x [T, D]; e0 [T, 6, D] time projection; context [B, L, D] embedded text.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& e0,
                        const torch::Tensor& context, const LayoutTensors& lt,
                        const PackedLayout& layout, AttentionPath path);

 private:
  ModelDims d_;
  torch::Tensor modulation_;  // [6, D] learned table added to the time projection
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr}, norm3_{nullptr};
  torch::nn::Linear q_{nullptr}, k_{nullptr}, v_{nullptr}, o_{nullptr};
  RMSNorm norm_q_{nullptr}, norm_k_{nullptr};
  torch::nn::Linear cq_{nullptr}, ck_{nullptr}, cv_{nullptr}, co_{nullptr};
  RMSNorm cnorm_q_{nullptr}, cnorm_k_{nullptr};
  torch::nn::Linear ffn1_{nullptr}, ffn2_{nullptr};
};
TORCH_MODULE(Block);

class VideoActionModelImpl : public torch::nn::Module {
 public:
  explicit VideoActionModelImpl(const ModelDims& dims);
  ModelOutputs forward(const ModelInputs& in, const PackedLayout& layout, const LayoutTensors& lt,
                       AttentionPath path = AttentionPath::kBlockSparse);
  const ModelDims& dims() const { return dims_; }

 private:
  torch::Tensor TimeEmbedding(torch::nn::Sequential& mlp, const torch::Tensor& t);

  ModelDims dims_;
  torch::nn::Linear video_in_{nullptr}, video_out_{nullptr}, action_in_{nullptr}, action_out_{nullptr};
  torch::nn::Sequential time_video_{nullptr}, time_action_{nullptr}, text_embed_{nullptr};
  torch::nn::Linear time_proj_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  torch::nn::LayerNorm head_norm_{nullptr};
  torch::Tensor head_modulation_;  // [2, D]
};
TORCH_MODULE(VideoActionModel);

// Sinusoidal embedding of timesteps [T] -> [T, freq_dim] (cos half, then sin half), computed in
// float64 and cast to `dtype`.
torch::Tensor SinusoidalEmbedding(const torch::Tensor& t, int64_t freq_dim, torch::Dtype dtype);

// [B, C, Fp, H, W] -> [B*Fp*Hp*Wp, C*p*p] and back.
torch::Tensor Patchify(const torch::Tensor& x, int64_t p);
torch::Tensor Unpatchify(const torch::Tensor& tokens, int64_t B, int64_t C, int64_t Fp, int64_t H,
                         int64_t W, int64_t p);

}  // namespace baton
