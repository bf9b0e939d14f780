#include "trainer/model/video_action_model.h"

#include "trainer/model/recompute.h"

#include <cmath>

namespace baton {
namespace nn = torch::nn;

namespace {

nn::Linear Lin(int64_t in, int64_t out) { return nn::Linear(nn::LinearOptions(in, out).bias(true)); }

nn::LayerNorm Norm(int64_t dim, double eps, bool affine) {
  return nn::LayerNorm(nn::LayerNormOptions({dim}).eps(eps).elementwise_affine(affine));
}

torch::Tensor GeluTanh(const torch::Tensor& x) { return torch::gelu(x, "tanh"); }

}  // namespace

torch::Tensor SinusoidalEmbedding(const torch::Tensor& t, int64_t freq_dim, torch::Dtype dtype) {
  const int64_t half = freq_dim / 2;
  auto freq = torch::pow(10000.0, -torch::arange(half, torch::kFloat64) / double(half));
  auto args = torch::outer(t.to(torch::kFloat64).cpu(), freq);
  return torch::cat({args.cos(), args.sin()}, 1).to(dtype).to(t.device());
}

torch::Tensor Patchify(const torch::Tensor& x, int64_t p) {
  const int64_t B = x.size(0), C = x.size(1), F = x.size(2), H = x.size(3), W = x.size(4);
  return x.view({B, C, F, H / p, p, W / p, p})
      .permute({0, 2, 3, 5, 1, 4, 6})
      .reshape({B * F * (H / p) * (W / p), C * p * p});
}

torch::Tensor Unpatchify(const torch::Tensor& tokens, int64_t B, int64_t C, int64_t F, int64_t H,
                         int64_t W, int64_t p) {
  return tokens.view({B, F, H / p, W / p, C, p, p})
      .permute({0, 4, 1, 2, 5, 3, 6})
      .reshape({B, C, F, H, W});
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps_) * weight_;
}

BlockImpl::BlockImpl(const ModelDims& d) : d_(d) {
  const int64_t D = d.dim;
  modulation_ = register_parameter("modulation", torch::randn({6, D}) / std::sqrt(double(D)));
  norm1_ = register_module("norm1", Norm(D, d.eps, false));
  norm2_ = register_module("norm2", Norm(D, d.eps, false));
  norm3_ = register_module("norm3", Norm(D, d.eps, true));
  q_ = register_module("self_attn_q", Lin(D, D));
  k_ = register_module("self_attn_k", Lin(D, D));
  v_ = register_module("self_attn_v", Lin(D, D));
  o_ = register_module("self_attn_o", Lin(D, D));
  norm_q_ = register_module("self_attn_norm_q", RMSNorm(D, d.eps));
  norm_k_ = register_module("self_attn_norm_k", RMSNorm(D, d.eps));
  cq_ = register_module("cross_attn_q", Lin(D, D));
  ck_ = register_module("cross_attn_k", Lin(D, D));
  cv_ = register_module("cross_attn_v", Lin(D, D));
  co_ = register_module("cross_attn_o", Lin(D, D));
  cnorm_q_ = register_module("cross_attn_norm_q", RMSNorm(D, d.eps));
  cnorm_k_ = register_module("cross_attn_norm_k", RMSNorm(D, d.eps));
  ffn1_ = register_module("ffn_0", Lin(D, d.ffn_dim));
  ffn2_ = register_module("ffn_2", Lin(d.ffn_dim, D));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x_in, const torch::Tensor& e0,
                                 const torch::Tensor& context, const LayoutTensors& lt,
                                 const PackedLayout& layout, AttentionPath path) {
  const int64_t T = x_in.size(0), H = d_.heads, hd = d_.head_dim();
  auto e = (e0 + modulation_).unbind(1);  // 6 x [T, D]
  torch::Tensor x = x_in;

  // 1. Self-attention, gated.
  auto h = norm1_(x) * (1 + e[1]) + e[0];
  auto q = ApplyRope(norm_q_(q_(h)).view({T, H, hd}), lt);
  auto k = ApplyRope(norm_k_(k_(h)).view({T, H, hd}), lt);
  auto v = v_(h).view({T, H, hd});
  auto a = path == AttentionPath::kBlockSparse ? BlockSparseAttention(q, k, v, lt)
                                               : DenseMaskedAttention(q, k, v, layout);
  x = x + e[2] * o_(a.reshape({T, d_.dim}));

  // 2. Cross-attention to the token's own sample's text (no gate, no RoPE).
  const int64_t B = context.size(0), L = context.size(1);
  auto cq = cnorm_q_(cq_(norm3_(x))).view({T, H, hd});
  auto ck = cnorm_k_(ck_(context)).view({B, L, H, hd});
  auto cv = cv_(context).view({B, L, H, hd});
  x = x + co_(TextCrossAttention(cq, ck, cv, lt).reshape({T, d_.dim}));

  // 3. Feed-forward, gated.
  auto f = norm2_(x) * (1 + e[4]) + e[3];
  return x + e[5] * ffn2_(GeluTanh(ffn1_(f)));
}

VideoActionModelImpl::VideoActionModelImpl(const ModelDims& d) : dims_(d) {
  const int64_t D = d.dim, pp = d.channels * d.patch * d.patch;
  video_in_ = register_module("patch_embedding", Lin(pp, D));
  video_out_ = register_module("head_video", Lin(D, pp));
  action_in_ = register_module("action_embedding", Lin(d.action_dim, D));
  action_out_ = register_module("head_action", Lin(D, d.action_dim));
  auto time_mlp = [&] {
    return nn::Sequential(Lin(d.freq_dim, D), nn::SiLU(), Lin(D, D));
  };
  time_video_ = register_module("time_embedding_video", time_mlp());
  time_action_ = register_module("time_embedding_action", time_mlp());
  time_proj_ = register_module("time_projection", Lin(D, 6 * D));
  text_embed_ = register_module("text_embedding",
                                nn::Sequential(Lin(d.text_dim, D), nn::Functional(GeluTanh), Lin(D, D)));
  blocks_ = register_module("blocks", nn::ModuleList());
  for (int64_t i = 0; i < d.layers; ++i) blocks_->push_back(Block(d));
  head_norm_ = register_module("head_norm", Norm(D, d.eps, false));
  head_modulation_ = register_parameter("head_modulation", torch::randn({2, D}) / std::sqrt(double(D)));
  // adaLN-zero: the time projection starts at zero, so gates come from the learned tables alone,
  // and the output layers start at zero, so the first prediction is 0 (loss = E|eps - x0|^2).
  if (!d.zero_init) return;
  torch::NoGradGuard no_grad;
  time_proj_->weight.zero_();
  time_proj_->bias.zero_();
  video_out_->weight.zero_();
  video_out_->bias.zero_();
  action_out_->weight.zero_();
  action_out_->bias.zero_();
}

torch::Tensor VideoActionModelImpl::TimeEmbedding(nn::Sequential& mlp, const torch::Tensor& t) {
  return mlp->forward(SinusoidalEmbedding(t, dims_.freq_dim, video_in_->weight.scalar_type()));
}

ModelOutputs VideoActionModelImpl::forward(const ModelInputs& in, const PackedLayout& layout,
                                           const LayoutTensors& lt, AttentionPath path) {
  const ModelDims& d = dims_;
  const int64_t B = in.video_noisy.size(0), C = in.video_noisy.size(1), Fp = in.video_noisy.size(2),
                H = in.video_noisy.size(3), W = in.video_noisy.size(4), N = in.action_noisy.size(3);
  const int64_t P = (H / d.patch) * (W / d.patch);
  auto action_tokens = [&](const torch::Tensor& a) {  // [B, A, Fp, N] -> [B*Fp*N, A]
    return a.permute({0, 2, 3, 1}).reshape({B * Fp * N, d.action_dim});
  };
  auto per_token = [](const torch::Tensor& t, int64_t k) {  // [B, Fp] -> [B*Fp*k]
    return t.unsqueeze(-1).expand({t.size(0), t.size(1), k}).reshape({-1});
  };

  auto x = torch::cat({video_in_(Patchify(in.video_noisy, d.patch)),
                       video_in_(Patchify(in.video_clean, d.patch)),
                       action_in_(action_tokens(in.action_noisy)),
                       action_in_(action_tokens(in.action_clean))});
  auto t_video = torch::cat({per_token(in.t_video_noisy, P), per_token(in.t_video_clean, P)});
  auto t_action = torch::cat({per_token(in.t_action_noisy, N),
                              torch::zeros({B * Fp * N}, in.t_action_noisy.options())});
  auto temb = torch::cat({TimeEmbedding(time_video_, t_video), TimeEmbedding(time_action_, t_action)});
  auto e0 = time_proj_(torch::silu(temb)).view({layout.tokens, 6, d.dim});
  auto context = text_embed_->forward(in.text);

  const bool recompute = d.recompute_blocks && torch::GradMode::is_enabled();
  for (const auto& block : *blocks_) {
    BlockImpl* b = block->as<Block>();
    if (recompute) {
      x = Recompute(
          [b, lt, layout, path](const std::vector<torch::Tensor>& in) {
            return b->forward(in[0], in[1], in[2], lt, layout, path);
          },
          {x, e0, context});
    } else {
      // Reuse: the block's two uses of the text (keys, values) sum their gradients in one node
      // per block, as they do inside a recomputed block, so both settings give the same bits.
      x = b->forward(x, e0, Reuse(context), lt, layout, path);
    }
  }
  auto he = head_modulation_.unsqueeze(0) + temb.unsqueeze(1);  // [T, 2, D]
  auto h = head_norm_(x) * (1 + he.select(1, 1)) + he.select(1, 0);

  ModelOutputs out;
  out.hidden = h;
  const int64_t V = layout.video_tokens;
  out.video = Unpatchify(video_out_(h.narrow(0, 0, V)), B, C, Fp, H, W, d.patch);
  out.action = action_out_(h.narrow(0, 2 * V, B * Fp * N))
                   .view({B, Fp, N, d.action_dim})
                   .permute({0, 3, 1, 2});
  return out;
}

}  // namespace baton
