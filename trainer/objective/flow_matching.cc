#include "trainer/objective/flow_matching.h"

#include <algorithm>
#include <cmath>

#include "schema/exit_codes.h"
#include "trainer/data/empty_text.h"
#include "trainer/fail.h"
#include "trainer/rng/philox.h"

namespace baton {

namespace {
constexpr int64_t kGridSize = 1000;       // timestep indices u in [0, 999]
constexpr int64_t kCleanNoiseMinU = 500;  // lightly-noised clean copies use u in [500, 999]
}  // namespace

TimestepGrid TimestepGrid::Make(double shift) {
  TimestepGrid g;
  for (int64_t i = 0; i < kGridSize; ++i) {
    const double s = 1.0 - double(i) / double(kGridSize);
    const double sigma = shift * s / (1.0 + (shift - 1.0) * s);
    g.sigma.push_back(sigma);
    g.t.push_back(1000.0 * sigma);
  }
  double lo = 1e300, sum = 0;
  for (double t : g.t) {
    const double w = std::exp(-2.0 * std::pow((t - 500.0) / 1000.0, 2));
    g.weight.push_back(w);
    lo = std::min(lo, w);
  }
  for (double& w : g.weight) {
    w -= lo;
    sum += w;
  }
  for (double& w : g.weight) w *= double(kGridSize) / sum;
  return g;
}

EpisodeDraws DrawEpisode(uint64_t seed, int64_t step, int64_t episode, int64_t F,
                         const DatasetShape& s, const ObjectiveSection& o) {
  RandomStream r(seed, StreamTag::kEpisodeNoise, uint64_t(step), uint64_t(episode));
  EpisodeDraws d;
  d.chunk = o.chunk_min + int64_t(r.UniformInt(uint64_t(o.chunk_max - o.chunk_min + 1)));
  d.window = o.window_min + int64_t(r.UniformInt(uint64_t(o.window_max - o.window_min + 1)));
  d.clean_noised = r.Uniform() < o.clean_noise_prob;
  for (int64_t f = 0; f < F; ++f) {
    d.u_video.push_back(int64_t(r.UniformInt(kGridSize)));
    d.u_action.push_back(int64_t(r.UniformInt(kGridSize)));
    d.u_clean.push_back(kCleanNoiseMinU + int64_t(r.UniformInt(kGridSize - kCleanNoiseMinU)));
  }
  auto normals = [&](int64_t n, std::vector<double>& out) {
    out.resize(size_t(n));
    for (auto& x : out) x = r.Normal();
  };
  RandomStream text(seed, StreamTag::kTextDropout, uint64_t(step), uint64_t(episode));
  d.text_dropped = o.text_dropout > 0 && text.Uniform() < o.text_dropout;
  normals(s.channels * F * s.height * s.width, d.eps_video);
  normals(s.action_dim * F * s.action_steps, d.eps_action);
  if (d.clean_noised) normals(s.channels * F * s.height * s.width, d.eps_clean);
  return d;
}

namespace {

// Per sample of a micro-batch: its noise, sigmas and loss weights padded to [B, Fp], its text
// (the empty prompt's where dropped) and its packing spec.
struct BatchNoise {
  torch::Tensor eps_v, eps_a, eps_c, sig_v, sig_a, sig_c, w_v, w_a, valid, text;
  std::vector<SampleSpec> specs;
};

BatchNoise DrawBatchNoise(const PaddedBatch& batch, uint64_t seed, int64_t step,
                          const DatasetShape& s, const ObjectiveSection& o,
                          const torch::Tensor& empty_text, MicroBatch* mb) {
  const TimestepGrid video_grid = TimestepGrid::Make(o.video_shift);
  const TimestepGrid action_grid = TimestepGrid::Make(o.action_shift);
  const int64_t B = batch.latents.size(0), Fp = batch.padded_frames;
  const int64_t C = s.channels, H = s.height, W = s.width, A = s.action_dim, N = s.action_steps;
  auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  BatchNoise n;
  n.eps_v = torch::zeros({B, C, Fp, H, W}, f64);
  n.eps_a = torch::zeros({B, A, Fp, N}, f64);
  n.eps_c = torch::zeros({B, C, Fp, H, W}, f64);
  n.sig_v = torch::zeros({B, Fp}, f64);
  n.sig_a = torch::zeros({B, Fp}, f64);
  n.sig_c = torch::zeros({B, Fp}, f64);
  n.w_v = torch::zeros({B, Fp}, f64);
  n.w_a = torch::zeros({B, Fp}, f64);
  n.valid = torch::zeros({B, Fp}, f64);
  n.text = batch.text.to(torch::kFloat64).clone();

  using torch::indexing::Slice;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t F = batch.valid_frames[b].item<int64_t>();
    const EpisodeDraws d = DrawEpisode(seed, step, batch.episodes[size_t(b)], F, s, o);
    n.specs.push_back({F, d.chunk, d.window});
    if (d.text_dropped) {
      if (!empty_text.defined()) {
        BATON_FAIL(kExitData,
                   std::string("objective.text_dropout dropped the text of an episode, but the "
                               "dataset has no ") +
                       kEmptyTextFile,
                   "write the dataset's empty-prompt embedding, or set objective.text_dropout: 0");
      }
      n.text[b].copy_(empty_text.to(torch::kFloat64).view({n.text.size(1), n.text.size(2)}));
      ++mb->text_dropped;
    }
    auto blob = [](const std::vector<double>& v, std::vector<int64_t> shape) {
      return torch::from_blob(const_cast<double*>(v.data()), shape, torch::kFloat64);
    };
    n.eps_v[b].index_put_({Slice(), Slice(0, F)}, blob(d.eps_video, {C, F, H, W}));
    n.eps_a[b].index_put_({Slice(), Slice(0, F)}, blob(d.eps_action, {A, F, N}));
    if (d.clean_noised)
      n.eps_c[b].index_put_({Slice(), Slice(0, F)}, blob(d.eps_clean, {C, F, H, W}));
    auto sv = n.sig_v.accessor<double, 2>(), sa = n.sig_a.accessor<double, 2>(),
         sc = n.sig_c.accessor<double, 2>(), wv = n.w_v.accessor<double, 2>(),
         wa = n.w_a.accessor<double, 2>(), va = n.valid.accessor<double, 2>();
    for (int64_t f = 0; f < F; ++f) {
      sv[b][f] = video_grid.sigma[d.u_video[f]];
      sa[b][f] = action_grid.sigma[d.u_action[f]];
      sc[b][f] = d.clean_noised ? video_grid.sigma[d.u_clean[f]] : 0.0;
      wv[b][f] = video_grid.weight[d.u_video[f]];
      wa[b][f] = action_grid.weight[d.u_action[f]];
      va[b][f] = 1.0;
    }
    mb->valid_frames += F;
  }
  return n;
}

}  // namespace

MicroBatch PrepareMicroBatch(const PaddedBatch& batch, uint64_t seed, int64_t step,
                             const DatasetShape& s, const ObjectiveSection& o,
                             const ModelDims& dims, torch::Dtype dtype, torch::Device device,
                             const torch::Tensor& empty_text) {
  const int64_t B = batch.latents.size(0), Fp = batch.padded_frames;
  const int64_t H = s.height, W = s.width, N = s.action_steps;
  auto x0 = batch.latents.to(torch::kFloat64);
  auto a0 = batch.actions.to(torch::kFloat64);
  MicroBatch mb;
  BatchNoise n = DrawBatchNoise(batch, seed, step, s, o, empty_text, &mb);
  const torch::Tensor &eps_v = n.eps_v, &eps_a = n.eps_a, &eps_c = n.eps_c;
  const torch::Tensor &sig_v = n.sig_v, &sig_a = n.sig_a, &sig_c = n.sig_c;
  const torch::Tensor &w_v = n.w_v, &w_a = n.w_a, &valid = n.valid, &text = n.text;
  mb.samples = B;
  mb.padded_frames = B * Fp;
  auto bc = [&](const torch::Tensor& sig, bool video) {  // [B, Fp] -> broadcastable
    return video ? sig.view({B, 1, Fp, 1, 1}) : sig.view({B, 1, Fp, 1});
  };
  auto vmask = valid.view({B, 1, Fp, 1, 1});
  auto xt = (1 - bc(sig_v, true)) * x0 + bc(sig_v, true) * eps_v;
  auto xc = ((1 - bc(sig_c, true)) * x0 + bc(sig_c, true) * eps_c) * vmask;
  // Upstream multiplies the noisy input, the clean copy and the target by the action mask.
  auto amask = batch.actions_mask.to(torch::kFloat64);
  auto at = ((1 - bc(sig_a, false)) * a0 + bc(sig_a, false) * eps_a) * amask;

  auto to = [&](const torch::Tensor& t) { return t.to(dtype).to(device); };
  mb.inputs.video_noisy = to(xt);
  mb.inputs.video_clean = to(xc);
  mb.inputs.action_noisy = to(at);
  mb.inputs.action_clean = to(a0 * amask);
  mb.inputs.t_video_noisy = to(sig_v * 1000.0);
  mb.inputs.t_video_clean = to(sig_c * 1000.0);
  mb.inputs.t_action_noisy = to(sig_a * 1000.0);
  mb.inputs.text = to(text);
  mb.target_video = to((eps_v - x0) * vmask);
  mb.target_action = to((eps_a - a0) * amask);
  mb.action_mask = to(amask);
  mb.weight_video = to(w_v);
  mb.weight_action = to(w_a);
  mb.frame_valid = to(valid);

  mb.layout = BuildPackedLayout(Fp, H / dims.patch, W / dims.patch, N, n.specs);
  mb.layout_tensors = MakeLayoutTensors(mb.layout, dims.head_dim(), dims.rope_theta, device, dtype);
  mb.tokens = mb.layout.valid_tokens();
  mb.padded_tokens = mb.layout.tokens - mb.tokens;
  return mb;
}

LossSums ComputeLoss(const ModelOutputs& out, const MicroBatch& mb, double global_frames,
                     const ObjectiveSection& o) {
  // Video: MSE over C*H*W of each frame, weighted by w(t) of its timestep, summed over valid
  // frames.
  auto dv = (out.video - mb.target_video).pow(2).mean({1, 3, 4});  // [B, Fp]
  auto video = (dv * mb.weight_video * mb.frame_valid).sum();
  // Actions: masked squared error summed per frame / the frame's mask count, weighted, summed.
  auto da = ((out.action - mb.target_action).pow(2) * mb.action_mask).sum({1, 3});  // [B, Fp]
  auto count = mb.action_mask.sum({1, 3});
  auto per_frame = torch::where(count > 0, da / count.clamp_min(1.0), torch::zeros_like(da));
  auto action = (per_frame * mb.weight_action * mb.frame_valid).sum();
  LossSums l;
  l.video = video;
  l.action = action;
  l.total = (o.video_loss_weight * video + o.action_loss_weight * action) / global_frames;
  return l;
}

}  // namespace baton
