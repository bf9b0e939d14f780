// The model and objective match upstream LingBot-VA where baton once differed (docs/upstream.md,
// "What changed to match upstream"): each test here fails on the old behaviour. Forward parity
// against an independent float64 transcription of upstream's forward is in
// tests/trainer/upstream_test.sh.
#include <gtest/gtest.h>

#include <set>

#include "tiny_trainer.h"
#include "trainer/data/pad_collate.h"
#include "trainer/distributed/process_group.h"
#include "trainer/fail.h"
#include "trainer/model/autocast.h"
#include "trainer/objective/flow_matching.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/train_step.h"

namespace baton {
namespace {

// The 29 + 27 * L state-dict keys of upstream's WanTransformer3DModel, with shapes.
std::map<std::string, std::vector<int64_t>> UpstreamKeys(const ModelDims& d) {
  const int64_t D = d.dim, P = d.patch * d.patch;
  std::map<std::string, std::vector<int64_t>> k;
  auto lin = [&](const std::string& n, int64_t in, int64_t out) {
    k[n + ".weight"] = {out, in};
    k[n + ".bias"] = {out};
  };
  lin("patch_embedding_mlp", d.channels * P, D);
  lin("action_embedder", d.action_dim, D);
  for (std::string e : {"condition_embedder", "condition_embedder_action"}) {
    lin(e + ".time_embedder.linear_1", d.freq_dim, D);
    lin(e + ".time_embedder.linear_2", D, D);
    lin(e + ".time_proj", D, 6 * D);
    lin(e + ".text_embedder.linear_1", d.text_dim, D);
    lin(e + ".text_embedder.linear_2", D, D);
  }
  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    k[b + "scale_shift_table"] = {1, 6, D};
    for (std::string a : {"attn1", "attn2"}) {
      for (std::string p : {"to_q", "to_k", "to_v", "to_out.0"}) lin(b + a + "." + p, D, D);
      k[b + a + ".norm_q.weight"] = {D};
      k[b + a + ".norm_k.weight"] = {D};
    }
    k[b + "norm2.weight"] = {D};
    k[b + "norm2.bias"] = {D};
    lin(b + "ffn.net.0.proj", D, d.ffn_dim);
    lin(b + "ffn.net.2", d.ffn_dim, D);
  }
  lin("proj_out", D, d.channels * P);
  lin("action_proj_out", D, d.action_dim);
  k["scale_shift_table"] = {1, 2, D};
  return k;
}

TEST(UpstreamParityTest, ParameterNamesAndShapesAreUpstreamsStateDictKeys) {
  test::TinyTrainer tiny;
  VideoActionModel model = tiny.Model();
  std::map<std::string, std::vector<int64_t>> mine;
  for (const auto& p : model->named_parameters()) mine[p.key()] = p.value().sizes().vec();
  const auto want = UpstreamKeys(tiny.dims);
  EXPECT_EQ(mine.size(), size_t(29 + 27 * tiny.dims.layers));
  EXPECT_EQ(mine, want);
}

// Defect 1: the action stream has its own time projection.
TEST(UpstreamParityTest, ActionStreamUsesItsOwnTimeProjection) {
  test::TinyTrainer tiny;
  VideoActionModel model = tiny.Model();
  auto eps = tiny.Episodes({0, 1});
  MicroBatch mb = PrepareMicroBatch(PadCollate(eps, 4), 5, 0, eps[0].shape, tiny.config.objective,
                                    tiny.dims, torch::kFloat64, torch::kCPU, tiny.empty_text);
  torch::NoGradGuard ng;
  auto base = model->forward(mb.inputs, mb.layout, mb.layout_tensors).hidden;
  auto params = model->named_parameters();
  // Two separate projections, and the action tokens use theirs: making it equal to the video one
  // (what a shared projection would be) changes the outputs.
  auto& video = params["condition_embedder.time_proj.weight"];
  auto& action = params["condition_embedder_action.time_proj.weight"];
  ASSERT_FALSE(torch::equal(video, action));
  action.copy_(video);
  params["condition_embedder_action.time_proj.bias"].copy_(
      params["condition_embedder.time_proj.bias"]);
  auto shared = model->forward(mb.inputs, mb.layout, mb.layout_tensors).hidden;
  EXPECT_GT((shared - base).abs().max().item<double>(), 1e-6);
}

// Defect 2: proj_out's features are patch-major, channel-minor: feature (ph * p + pw) * C + c.
TEST(UpstreamParityTest, UnpatchifyReadsPatchMajorChannelMinorFeatures) {
  const int64_t B = 1, C = 3, F = 2, H = 4, W = 6, p = 2;
  const int64_t tokens = F * (H / p) * (W / p), feats = C * p * p;
  auto t = torch::arange(tokens * feats, torch::kFloat64).view({tokens, feats});
  auto x = Unpatchify(t, B, C, F, H, W, p);
  for (int64_t f = 0; f < F; ++f)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t tok = (f * (H / p) + h / p) * (W / p) + w / p;
          const int64_t feat = ((h % p) * p + (w % p)) * C + c;
          ASSERT_EQ(x[0][c][f][h][w].item<double>(), double(tok * feats + feat))
              << "c " << c << " f " << f << " h " << h << " w " << w;
        }
  // Patchify stays channel-major (c, ph, pw), like upstream's input rearrange.
  auto v = torch::randn({B, C, F, H, W}, torch::kFloat64);
  auto pt = Patchify(v, p);
  EXPECT_EQ(pt[0][1 * p * p + 1 * p + 0].item<double>(), v[0][1][0][1][0].item<double>());
}

// Defect 4: unused action channels carry no noise into the model, nor into the target.
TEST(UpstreamParityTest, NoisyActionsCleanActionsAndTargetAreMasked) {
  test::TinyTrainer tiny;
  auto eps = tiny.Episodes({0, 1});
  PaddedBatch batch = PadCollate(eps, 4);
  // Channel 3 unused everywhere (the synthetic data already masks some; make it certain).
  batch.actions_mask.select(1, 3).zero_();
  MicroBatch mb = PrepareMicroBatch(batch, 5, 0, eps[0].shape, tiny.config.objective, tiny.dims,
                                    torch::kFloat64, torch::kCPU, tiny.empty_text);
  auto off = batch.actions_mask.to(torch::kFloat64) == 0;
  ASSERT_GT(off.sum().item<int64_t>(), 0);
  EXPECT_EQ(mb.inputs.action_noisy.masked_select(off).abs().max().item<double>(), 0.0);
  EXPECT_EQ(mb.inputs.action_clean.masked_select(off).abs().max().item<double>(), 0.0);
  EXPECT_EQ(mb.target_action.masked_select(off).abs().max().item<double>(), 0.0);
  auto on = off.logical_not().logical_and(mb.frame_valid.view({2, 1, -1, 1}).expand_as(off) > 0);
  EXPECT_GT(mb.inputs.action_noisy.masked_select(on).abs().max().item<double>(), 0.0);
}

// Defect 5: text dropout swaps in the empty prompt per (seed, step, episode).
TEST(UpstreamParityTest, TextDropoutUsesTheEmptyPromptPerEpisodeDraw) {
  test::TinyTrainer tiny(16, 3, 5);
  auto eps = tiny.Episodes({0, 1, 2, 3, 4, 5, 6, 7});
  const PaddedBatch batch = PadCollate(eps, 4);
  auto prep = [&](double p, int64_t step, const PaddedBatch& b) {
    ObjectiveSection o = tiny.config.objective;
    o.text_dropout = p;
    return PrepareMicroBatch(b, 5, step, eps[0].shape, o, tiny.dims, torch::kFloat64, torch::kCPU,
                             tiny.empty_text);
  };
  const auto empty = tiny.empty_text.to(torch::kFloat64);
  auto all = prep(1.0, 0, batch), none = prep(0.0, 0, batch), half = prep(0.5, 2, batch);
  int64_t dropped = 0;
  for (int64_t b = 0; b < 8; ++b) {
    EXPECT_TRUE(torch::equal(all.inputs.text[b], empty)) << b;
    EXPECT_TRUE(torch::equal(none.inputs.text[b], batch.text[b].to(torch::kFloat64))) << b;
    const bool is_empty = torch::equal(half.inputs.text[b], empty);
    dropped += is_empty;
    // Independent of batching: the same episode alone draws the same.
    const auto alone = prep(0.5, 2, PadCollate({eps[size_t(b)]}, 4));
    EXPECT_EQ(torch::equal(alone.inputs.text[0], empty), is_empty) << b;
    EXPECT_EQ(DrawEpisode(5, 2, b, eps[size_t(b)].frames, eps[0].shape,
                          [&] {
                            ObjectiveSection o = tiny.config.objective;
                            o.text_dropout = 0.5;
                            return o;
                          }())
                  .text_dropped,
              is_empty);
  }
  EXPECT_EQ(all.text_dropped, 8);
  EXPECT_EQ(none.text_dropped, 0);
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 8);
  // The dropout draw has its own stream: turning dropout on changes no noise.
  EXPECT_TRUE(torch::equal(all.inputs.video_noisy, none.inputs.video_noisy));
  // Without the empty prompt, a dropped text is a data error naming the file.
  try {
    ObjectiveSection o = tiny.config.objective;
    o.text_dropout = 1.0;
    PrepareMicroBatch(batch, 5, 0, eps[0].shape, o, tiny.dims, torch::kFloat64, torch::kCPU);
    FAIL() << "no error";
  } catch (const FatalError& e) {
    EXPECT_EQ(e.exit_code(), 65);
    EXPECT_NE(std::string(e.what()).find("meta/empty_text.safetensors"), std::string::npos);
  }
}

// Defect 6: condition_embedder_action.text_embedder is carried, never trained.
TEST(UpstreamParityTest, UnusedActionTextEmbedderIsFrozenAndUntouchedByAdamW) {
  test::TinyTrainer tiny;
  VideoActionModel model = tiny.Model();
  const auto trainable = TrainableParameters(model);
  std::set<std::string> names;
  for (const auto& [n, p] : trainable) names.insert(n);
  std::map<std::string, torch::Tensor> frozen;
  for (const auto& p : model->named_parameters()) {
    if (p.key().rfind("condition_embedder_action.text_embedder.", 0) == 0) {
      EXPECT_FALSE(p.value().requires_grad());
      EXPECT_EQ(names.count(p.key()), 0u);
      frozen[p.key()] = p.value().detach().clone();
    } else {
      EXPECT_EQ(names.count(p.key()), 1u) << p.key();
    }
  }
  ASSERT_EQ(frozen.size(), 4u);
  AdamW opt(trainable, tiny.config.optim);
  auto group = ProcessGroupHandle::Create(DistEnv{}, false);
  TrainStepper stepper(model, &opt, group.get(), tiny.config, *tiny.index.shape, torch::kFloat64,
                       torch::kCPU, tiny.empty_text);
  auto eps = tiny.Episodes({0, 1, 2, 3});
  double frames = 0;
  for (const auto& e : eps) frames += double(e.frames);
  for (int step = 0; step < 2; ++step)
    stepper.Step({PadCollate(eps, 4)}, step, frames, 1e-2, false);
  for (const auto& p : model->named_parameters()) {
    if (frozen.count(p.key())) {
      EXPECT_TRUE(torch::equal(p.value(), frozen[p.key()])) << p.key();
    }
  }
}

// Upstream's training casts the video/action inputs to bf16 before the input projections: a bf16
// run sees inputs rounded to bf16 (so pre-rounded inputs give the same output), a float64 run
// does not; and the residual stream stays in the activation dtype.
TEST(UpstreamParityTest, Bf16RunsRoundInputsLikeUpstreamAndFloat64RunsDoNot) {
  test::TinyTrainer tiny;
  auto eps = tiny.Episodes({0, 1});
  MicroBatch mb = PrepareMicroBatch(PadCollate(eps, 4), 5, 0, eps[0].shape, tiny.config.objective,
                                    tiny.dims, torch::kFloat64, torch::kCPU, tiny.empty_text);
  ModelInputs rounded = mb.inputs;
  for (auto* t :
       {&rounded.video_noisy, &rounded.video_clean, &rounded.action_noisy, &rounded.action_clean})
    *t = t->to(torch::kBFloat16).to(torch::kFloat64);
  torch::NoGradGuard ng;
  VideoActionModel m64 = tiny.Model();
  auto a = m64->forward(mb.inputs, mb.layout, mb.layout_tensors).video;
  auto b = m64->forward(rounded, mb.layout, mb.layout_tensors).video;
  EXPECT_GT((a - b).abs().max().item<double>(), 0.0);

  torch::manual_seed(3);
  VideoActionModel m32(tiny.dims);
  ModelInputs x32 = mb.inputs;
  for (auto* t : {&x32.video_noisy, &x32.video_clean, &x32.action_noisy, &x32.action_clean,
                  &x32.t_video_noisy, &x32.t_video_clean, &x32.t_action_noisy, &x32.text})
    *t = t->to(torch::kFloat32);
  ModelInputs r32 = x32;
  for (auto* t : {&r32.video_noisy, &r32.video_clean, &r32.action_noisy, &r32.action_clean})
    *t = t->to(torch::kBFloat16).to(torch::kFloat32);
  LayoutTensors lt32 = MakeLayoutTensors(mb.layout, tiny.dims.head_dim(), tiny.dims.rope_theta,
                                         torch::kCPU, torch::kFloat32);
  AutocastBf16 autocast(true, false);
  auto c = m32->forward(x32, mb.layout, lt32);
  auto d = m32->forward(r32, mb.layout, lt32);
  EXPECT_TRUE(torch::equal(c.video, d.video));
  EXPECT_TRUE(torch::equal(c.action, d.action));
  EXPECT_EQ(c.hidden.scalar_type(), torch::kBFloat16);
}

}  // namespace
}  // namespace baton
