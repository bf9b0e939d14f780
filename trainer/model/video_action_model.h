// VideoActionModel: the transformer of docs/model.md at any size — upstream LingBot-VA's
// WanTransformer3DModel, parameter for parameter. Video patch tokens and action tokens with their
// own in/out layers, timestep embedders and time projections; shared adaLN-zero blocks with
// QK-RMSNorm across heads, 3-axis RoPE, per-token timesteps, per-sample text cross-attention.
//
// Module paths are upstream's state-dict keys (`condition_embedder.time_proj.weight`,
// `blocks.0.attn1.to_q.weight`, `blocks.0.ffn.net.0.proj.weight`, ...: 29 + 27 * layers tensors),
// so checkpoints need no name table (docs/checkpoint_format.md). Upstream's unused
// `condition_embedder_action.text_embedder.*` exists here too, frozen (requires_grad false): it
// is loaded and written back unchanged and never reaches the optimizer.
//
// forward() takes one packed row (the micro-batch's episodes, see packed_layout.h) and returns
// the predictions for the noisy video and noisy action tokens, shaped like the inputs. The layout
// tensors are arguments, never state, so any number of forwards of any shapes may be in flight
// before their backwards. Owns its parameters; not thread-safe.
#pragma once

#include <torch/torch.h>

#include "trainer/model/attention.h"
#include "trainer/model/model_dims.h"

namespace baton {

enum class AttentionPath { kBlockSparse, kDense };

struct ModelInputs {
  torch::Tensor video_noisy;     // [B, C, Fp, H, W]
  torch::Tensor video_clean;     // [B, C, Fp, H, W]
  torch::Tensor action_noisy;    // [B, A, Fp, N]
  torch::Tensor action_clean;    // [B, A, Fp, N]
  torch::Tensor t_video_noisy;   // [B, Fp] timesteps in [0, 1000]
  torch::Tensor t_video_clean;   // [B, Fp] (0 unless the clean copy was lightly noised)
  torch::Tensor t_action_noisy;  // [B, Fp]
  torch::Tensor t_action_clean;  // [B, Fp]; undefined = 0 (training's clean actions)
  torch::Tensor text;            // [B, L, Dt]
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

// Two Linear layers `linear_1`, `linear_2` with an activation between (diffusers'
// TimestepEmbedding: SiLU; PixArtAlphaTextProjection: GELU-tanh).
class TwoLayerImpl : public torch::nn::Module {
 public:
  TwoLayerImpl(int64_t in, int64_t dim, bool gelu);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear linear_1{nullptr}, linear_2{nullptr};

 private:
  bool gelu_;
};
TORCH_MODULE(TwoLayer);

// `condition_embedder` / `condition_embedder_action`: time MLP, time projection to the six
// modulation vectors, and the text projection.
class ConditionEmbedderImpl : public torch::nn::Module {
 public:
  ConditionEmbedderImpl(const ModelDims& d, bool frozen_text);
  TwoLayer time_embedder{nullptr}, text_embedder{nullptr};
  torch::nn::Linear time_proj{nullptr};
};
TORCH_MODULE(ConditionEmbedder);

// `attn1` / `attn2`: to_q, to_k, to_v, to_out.0 and the full-width QK RMSNorms.
class AttentionProjImpl : public torch::nn::Module {
 public:
  explicit AttentionProjImpl(const ModelDims& d);
  torch::nn::Linear to_q{nullptr}, to_k{nullptr}, to_v{nullptr}, to_out{nullptr};
  RMSNorm norm_q{nullptr}, norm_k{nullptr};
};
TORCH_MODULE(AttentionProj);

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const ModelDims& d);
  // x [T, D]; e0 [T, 6, D] time projection; context [B, L, D] embedded text.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& e0,
                        const torch::Tensor& context, const LayoutTensors& lt,
                        const PackedLayout& layout, AttentionPath path);

 private:
  ModelDims d_;
  torch::Tensor scale_shift_table_;  // [1, 6, D] learned table added to the time projection
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr}, norm3_{nullptr};
  AttentionProj attn1_{nullptr}, attn2_{nullptr};
  torch::nn::Linear ffn_in_{nullptr}, ffn_out_{nullptr};  // ffn.net.0.proj, ffn.net.2
};
TORCH_MODULE(Block);

class VideoActionModelImpl : public torch::nn::Module {
 public:
  explicit VideoActionModelImpl(const ModelDims& dims);
  ModelOutputs forward(const ModelInputs& in, const PackedLayout& layout, const LayoutTensors& lt,
                       AttentionPath path = AttentionPath::kBlockSparse);
  const ModelDims& dims() const { return dims_; }

 private:
  torch::Tensor TimeEmbedding(TwoLayer& mlp, const torch::Tensor& t);

  ModelDims dims_;
  torch::nn::Linear patch_embedding_{nullptr}, proj_out_{nullptr}, action_embedder_{nullptr},
      action_proj_out_{nullptr};
  ConditionEmbedder cond_video_{nullptr}, cond_action_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  torch::nn::LayerNorm norm_out_{nullptr};
  torch::Tensor scale_shift_table_;  // [1, 2, D]
};
TORCH_MODULE(VideoActionModel);

// The parameters the optimizer updates (requires_grad), by name, in module order.
std::vector<std::pair<std::string, torch::Tensor>> TrainableParameters(VideoActionModel& model);

// Sinusoidal embedding of timesteps [T] -> [T, freq_dim] (cos half, then sin half), computed in
// float64 and cast to `dtype`.
torch::Tensor SinusoidalEmbedding(const torch::Tensor& t, int64_t freq_dim, torch::Dtype dtype);

// [B, C, Fp, H, W] -> [B*Fp*Hp*Wp, C*p*p], features channel-major (c, ph, pw) like upstream's
// patchify; Unpatchify reads the head's features patch-major, channel-minor ((ph, pw), c) like
// upstream's proj_out. The two orders differ on purpose: they are upstream's.
torch::Tensor Patchify(const torch::Tensor& x, int64_t p);
torch::Tensor Unpatchify(const torch::Tensor& tokens, int64_t B, int64_t C, int64_t Fp, int64_t H,
                         int64_t W, int64_t p);

}  // namespace baton
