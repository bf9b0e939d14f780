#include "trainer/model/video_action_model.h"

#include "trainer/model/block_hook.h"
#include "trainer/model/recompute.h"

#include <cmath>

#include "trainer/model/autocast.h"

namespace baton {
namespace nn = torch::nn;

namespace {

nn::Linear Lin(int64_t in, int64_t out) {
  return nn::Linear(nn::LinearOptions(in, out).bias(true));
}

nn::LayerNorm Norm(int64_t dim, double eps, bool affine) {
  return nn::LayerNorm(nn::LayerNormOptions({dim}).eps(eps).elementwise_affine(affine));
}

torch::Tensor GeluTanh(const torch::Tensor& x) { return torch::gelu(x, "tanh"); }

// Upstream computes norms, modulation and the self-attention and FFN residual adds in float32
// even when the activations are bfloat16 (then casts back); float32 and float64 runs are
// unchanged by these two.
torch::Tensor Wide(const torch::Tensor& x) {
  const auto t = x.scalar_type();
  return t == torch::kBFloat16 || t == torch::kHalf ? x.to(torch::kFloat32) : x;
}
torch::Tensor AddWide(const torch::Tensor& x, const torch::Tensor& delta) {
  return (Wide(x) + delta).to(x.scalar_type());
}

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
  // Feature (ph * p + pw) * C + c: upstream's `b l (n c) -> b (l n) c`.
  return tokens.view({B, F, H / p, W / p, p, p, C})
      .permute({0, 6, 1, 2, 4, 3, 5})
      .reshape({B, C, F, H, W});
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps_) * weight_;
}

TwoLayerImpl::TwoLayerImpl(int64_t in, int64_t dim, bool gelu) : gelu_(gelu) {
  linear_1 = register_module("linear_1", Lin(in, dim));
  linear_2 = register_module("linear_2", Lin(dim, dim));
}

torch::Tensor TwoLayerImpl::forward(const torch::Tensor& x) {
  auto h = linear_1(x);
  return linear_2(gelu_ ? GeluTanh(h) : torch::silu(h));
}

ConditionEmbedderImpl::ConditionEmbedderImpl(const ModelDims& d, bool frozen_text) {
  time_embedder = register_module("time_embedder", TwoLayer(d.freq_dim, d.dim, false));
  time_proj = register_module("time_proj", Lin(d.dim, 6 * d.dim));
  text_embedder = register_module("text_embedder", TwoLayer(d.text_dim, d.dim, true));
  if (frozen_text) {
    for (auto& p : text_embedder->parameters()) p.set_requires_grad(false);
  }
}

AttentionProjImpl::AttentionProjImpl(const ModelDims& d) {
  const int64_t D = d.dim;
  to_q = register_module("to_q", Lin(D, D));
  to_k = register_module("to_k", Lin(D, D));
  to_v = register_module("to_v", Lin(D, D));
  auto out = register_module("to_out", nn::ModuleList());  // to_out.1 is upstream's Dropout
  to_out = Lin(D, D);
  out->push_back(to_out);
  norm_q = register_module("norm_q", RMSNorm(D, d.eps));
  norm_k = register_module("norm_k", RMSNorm(D, d.eps));
}

BlockImpl::BlockImpl(const ModelDims& d) : d_(d) {
  const int64_t D = d.dim;
  norm1_ = register_module("norm1", Norm(D, d.eps, false));
  attn1_ = register_module("attn1", AttentionProj(d));
  attn2_ = register_module("attn2", AttentionProj(d));
  norm2_ = register_module("norm2", Norm(D, d.eps, true));  // affine, before cross-attention
  // ffn.net.0.proj (diffusers' GELU module wraps its Linear), ffn.net.2 (net.1 is Dropout).
  auto ffn = register_module("ffn", std::make_shared<nn::Module>());
  auto net = ffn->register_module("net", std::make_shared<nn::Module>());
  auto gelu = net->register_module("0", std::make_shared<nn::Module>());
  ffn_in_ = gelu->register_module("proj", Lin(D, d.ffn_dim));
  ffn_out_ = net->register_module("2", Lin(d.ffn_dim, D));
  norm3_ = register_module("norm3", Norm(D, d.eps, false));
  scale_shift_table_ =
      register_parameter("scale_shift_table", torch::randn({1, 6, D}) / std::sqrt(double(D)));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x_in, const torch::Tensor& e0,
                                 const torch::Tensor& context, const LayoutTensors& lt,
                                 const PackedLayout& layout, AttentionPath path) {
  const int64_t T = x_in.size(0), H = d_.heads, hd = d_.head_dim();
  const auto act = x_in.scalar_type();
  auto e = (Wide(e0) + scale_shift_table_).unbind(1);  // 6 x [T, D]
  torch::Tensor x = x_in;

  // 1. Self-attention, gated; the residual is added in (at least) float32.
  auto h = (norm1_(Wide(x)) * (1 + e[1]) + e[0]).to(act);
  auto q = ApplyRope(attn1_->norm_q(attn1_->to_q(h)).view({T, H, hd}), lt);
  auto k = ApplyRope(attn1_->norm_k(attn1_->to_k(h)).view({T, H, hd}), lt);
  auto v = attn1_->to_v(h).view({T, H, hd});
  auto a = path == AttentionPath::kBlockSparse
               ? BlockSparseAttention(q, k, v, lt, d_.recompute_attention_entries)
               : DenseMaskedAttention(q, k, v, layout);
  x = AddWide(x, attn1_->to_out(a.reshape({T, d_.dim})) * e[2]);

  // 2. Cross-attention to the token's own sample's text (no gate, no RoPE); the residual is
  // added in the activation dtype, as upstream does.
  const int64_t B = context.size(0), L = context.size(1);
  auto c = norm2_(Wide(x)).to(act);
  auto cq = attn2_->norm_q(attn2_->to_q(c)).view({T, H, hd});
  auto ck = attn2_->norm_k(attn2_->to_k(context)).view({B, L, H, hd});
  auto cv = attn2_->to_v(context).view({B, L, H, hd});
  x = x + attn2_->to_out(TextCrossAttention(cq, ck, cv, lt).reshape({T, d_.dim})).to(act);

  // 3. Feed-forward, gated; the residual is added in (at least) float32.
  auto f = (norm3_(Wide(x)) * (1 + e[4]) + e[3]).to(act);
  return AddWide(x, Wide(ffn_out_(GeluTanh(ffn_in_(f)))) * e[5]);
}

VideoActionModelImpl::VideoActionModelImpl(const ModelDims& d) : dims_(d) {
  const int64_t D = d.dim, pp = d.channels * d.patch * d.patch;
  patch_embedding_ = register_module("patch_embedding_mlp", Lin(pp, D));
  action_embedder_ = register_module("action_embedder", Lin(d.action_dim, D));
  cond_video_ = register_module("condition_embedder", ConditionEmbedder(d, false));
  // Upstream deep-copies the video embedder: a second time projection for the action stream,
  // and a text projection that nothing uses (both streams read condition_embedder's).
  cond_action_ = register_module("condition_embedder_action", ConditionEmbedder(d, true));
  blocks_ = register_module("blocks", nn::ModuleList());
  for (int64_t i = 0; i < d.layers; ++i) blocks_->push_back(Block(d));
  norm_out_ = register_module("norm_out", Norm(D, d.eps, false));
  proj_out_ = register_module("proj_out", Lin(D, pp));
  action_proj_out_ = register_module("action_proj_out", Lin(D, d.action_dim));
  scale_shift_table_ =
      register_parameter("scale_shift_table", torch::randn({1, 2, D}) / std::sqrt(double(D)));
  // adaLN-zero: the time projections start at zero, so gates come from the learned tables
  // alone, and the output layers start at zero, so the first prediction is 0.
  if (!d.zero_init) return;
  torch::NoGradGuard no_grad;
  for (auto* l :
       {&cond_video_->time_proj, &cond_action_->time_proj, &proj_out_, &action_proj_out_}) {
    (*l)->weight.zero_();
    (*l)->bias.zero_();
  }
}

torch::Tensor VideoActionModelImpl::TimeEmbedding(TwoLayer& mlp, const torch::Tensor& t) {
  // The master dtype, read from a parameter that is never a bf16 compute copy (optim.master).
  return mlp->forward(SinusoidalEmbedding(t, dims_.freq_dim, scale_shift_table_.scalar_type()));
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
  // Upstream's training casts the four video/action inputs to bfloat16 before the input
  // projections; a bf16 run rounds them here the same way (float32/64 runs keep them).
  auto input = [](const torch::Tensor& x) {
    return AutocastBf16Active() ? x.to(torch::kBFloat16) : x;
  };

  auto x = torch::cat({patch_embedding_(Patchify(input(in.video_noisy), d.patch)),
                       patch_embedding_(Patchify(input(in.video_clean), d.patch)),
                       action_embedder_(action_tokens(input(in.action_noisy))),
                       action_embedder_(action_tokens(input(in.action_clean)))});
  auto t_video = torch::cat({per_token(in.t_video_noisy, P), per_token(in.t_video_clean, P)});
  auto t_action_clean =
      in.t_action_clean.defined() ? in.t_action_clean : torch::zeros_like(in.t_action_noisy);
  auto t_action = torch::cat({per_token(in.t_action_noisy, N), per_token(t_action_clean, N)});
  auto temb_video = TimeEmbedding(cond_video_->time_embedder, t_video);
  auto temb_action = TimeEmbedding(cond_action_->time_embedder, t_action);
  auto temb = torch::cat({temb_video, temb_action});
  // Each stream has its own time projection (upstream's condition_embedder_action.time_proj).
  auto e0 = torch::cat({cond_video_->time_proj(torch::silu(temb_video)),
                        cond_action_->time_proj(torch::silu(temb_action))})
                .view({layout.tokens, 6, d.dim});
  auto context = cond_video_->text_embedder->forward(in.text);

  const bool recompute = d.recompute_blocks && torch::GradMode::is_enabled();
  // Block boundaries for a watching caller (block_hook.h): before each block here, and in
  // backward from hooks on the block outputs, which observe a gradient and never change it.
  const std::shared_ptr<const BlockHook> hook = CurrentBlockHook();
  const bool backward_hooks = hook && x.requires_grad();
  auto on_backward = [&hook](const torch::Tensor& t, int64_t block) {
    t.register_hook([hook, block](const torch::Tensor&) { (*hook)(BlockPass::kBackward, block); });
  };
  // "Past block 0" on the text context: used by every block and made last before them, its node
  // is the first to run once block 0's gradient pass is done (the embedders' come after).
  if (backward_hooks) on_backward(context.requires_grad() ? context : x, -1);
  int64_t index = 0;
  for (const auto& block : *blocks_) {
    BlockImpl* b = block->as<Block>();
    if (hook) (*hook)(BlockPass::kForward, index);
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
    if (backward_hooks) on_backward(x, index);
    ++index;
  }
  if (hook) (*hook)(BlockPass::kForward, index);
  auto he = scale_shift_table_ + Wide(temb).unsqueeze(1);  // [T, 2, D]
  auto h = (norm_out_(Wide(x)) * (1 + he.select(1, 1)) + he.select(1, 0)).to(x.scalar_type());

  ModelOutputs out;
  out.hidden = h;
  const int64_t V = layout.video_tokens;
  out.video = Unpatchify(proj_out_(h.narrow(0, 0, V)), B, C, Fp, H, W, d.patch);
  out.action = action_proj_out_(h.narrow(0, 2 * V, B * Fp * N))
                   .view({B, Fp, N, d.action_dim})
                   .permute({0, 3, 1, 2});
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> TrainableParameters(VideoActionModel& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : model->named_parameters()) {
    if (p.value().requires_grad()) out.push_back({p.key(), p.value()});
  }
  return out;
}

}  // namespace baton
