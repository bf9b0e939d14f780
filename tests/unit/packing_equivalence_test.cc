// Packed == unpacked, exactly (float64): the loss normalisation and the per-episode randomness
// make a packed batch, single episodes, and every batch x accumulation split of an optimizer step
// give the same loss, gradients and update.
#include <gtest/gtest.h>

#include "tiny_trainer.h"
#include "trainer/data/pad_collate.h"
#include "trainer/distributed/process_group.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/train_step.h"
#include "trainer/train/verify_packing.h"

namespace baton {
namespace {

TEST(PackingEquivalenceTest, PackedBatchEqualsSingleEpisodesEqualAndMixedLengths) {
  test::TinyTrainer tiny(16, 4, 9);
  VideoActionModel model = tiny.Model();
  // Equal lengths: synthesise by picking episodes of one length; mixed: four different ones.
  std::map<int64_t, std::vector<int64_t>> by_len;
  for (size_t i = 0; i < tiny.index.episodes.size(); ++i)
    by_len[tiny.index.episodes[i].frames].push_back(i);
  std::vector<int64_t> mixed;
  for (const auto& [len, ids] : by_len) {
    if (mixed.size() < 4) mixed.push_back(ids[0]);
  }
  ASSERT_EQ(mixed.size(), 4u);
  const auto r = ComparePackedWithSingle(model, tiny.config, tiny.Episodes(mixed), 0,
                                         torch::kFloat64, "mixed", tiny.empty_text);
  EXPECT_GT(r.padded_frames, *std::min_element(r.frames.begin(), r.frames.end()));
  EXPECT_LT(r.loss_rel_diff, 1e-10);
  EXPECT_LT(r.max_grad_rel_diff, 1e-10) << r.worst_param;
  EXPECT_EQ(r.grads_finite, r.grads_total);
  EXPECT_GT(r.loss_packed, 0.0);

  const std::vector<int64_t> same = {mixed[0], mixed[0], mixed[0], mixed[0]};
  const auto e = ComparePackedWithSingle(model, tiny.config, tiny.Episodes(same), 3,
                                         torch::kFloat64, "equal", tiny.empty_text);
  EXPECT_LT(e.loss_rel_diff, 1e-10);
  EXPECT_LT(e.max_grad_rel_diff, 1e-10);
}

struct StepResult {
  std::vector<torch::Tensor> grads, updates;
  double loss;
};

StepResult OneStep(test::TinyTrainer& tiny, int64_t batch, int64_t accum) {
  VideoActionModel model = tiny.Model();
  std::vector<std::pair<std::string, torch::Tensor>> params;
  params = TrainableParameters(model);
  std::vector<torch::Tensor> before;
  for (auto& p : params) before.push_back(p.second.detach().clone());
  AdamW opt(params, tiny.config.optim);
  auto group = ProcessGroupHandle::Create(DistEnv{}, false);
  TrainStepper stepper(model, &opt, group.get(), tiny.config, *tiny.index.shape, torch::kFloat64,
                       test::TestDevice(), tiny.empty_text);
  std::vector<PaddedBatch> micro;
  double frames = 0;
  for (int64_t m = 0; m < accum; ++m) {
    std::vector<int64_t> ids;
    for (int64_t b = 0; b < batch; ++b) ids.push_back(m * batch + b);
    auto eps = tiny.Episodes(ids);
    for (const auto& e : eps) frames += double(e.frames);
    micro.push_back(PadCollate(eps, tiny.config.data.pad_multiple));
  }
  const StepStats st = stepper.Step(micro, /*step=*/4, frames, /*lr=*/1e-3, false);
  StepResult r;
  r.loss = st.loss;
  for (size_t i = 0; i < params.size(); ++i) {
    r.grads.push_back(params[i].second.grad().clone());
    r.updates.push_back(params[i].second.detach() - before[i]);
  }
  return r;
}

TEST(PackingEquivalenceTest, OneOptimizerStepIsTheSameForEveryBatchAccumSplit) {
  test::TinyTrainer tiny(16, 3, 9);
  tiny.config.optim.grad_clip = 0.5;  // exercise the clip too
  const StepResult a = OneStep(tiny, 1, 16), b = OneStep(tiny, 4, 4), c = OneStep(tiny, 16, 1);
  EXPECT_GT(a.loss, 0.0);
  EXPECT_LT(std::abs(a.loss - b.loss) / a.loss, 1e-10);
  EXPECT_LT(std::abs(a.loss - c.loss) / a.loss, 1e-10);
  for (size_t i = 0; i < a.grads.size(); ++i) {
    EXPECT_LT(MaxRelDiff(b.grads[i], a.grads[i]), 1e-10) << i;
    EXPECT_LT(MaxRelDiff(c.grads[i], a.grads[i]), 1e-10) << i;
    EXPECT_LT(MaxRelDiff(b.updates[i], a.updates[i]), 1e-10) << i;
    EXPECT_LT(MaxRelDiff(c.updates[i], a.updates[i]), 1e-10) << i;
  }
}

TEST(PackingEquivalenceTest, Bf16ComputeKeepsFloat32MasterWeights) {
  test::TinyTrainer tiny(8, 3, 9);
  torch::manual_seed(3);
  VideoActionModel model(tiny.dims);  // float32 parameters
  model->to(test::TestDevice());
  std::vector<std::pair<std::string, torch::Tensor>> params;
  params = TrainableParameters(model);
  const auto before = params[0].second.detach().clone();
  AdamW opt(params, tiny.config.optim);
  auto group = ProcessGroupHandle::Create(DistEnv{}, false);
  TrainStepper stepper(model, &opt, group.get(), tiny.config, *tiny.index.shape, torch::kBFloat16,
                       test::TestDevice(), tiny.empty_text);
  auto eps = tiny.Episodes({0, 1, 2, 3});
  double frames = 0;
  for (const auto& e : eps) frames += double(e.frames);
  const StepStats st = stepper.Step({PadCollate(eps, 4)}, 0, frames, 1e-3, false);
  EXPECT_TRUE(std::isfinite(st.loss));
  EXPECT_GT(st.loss, 0.0);
  EXPECT_EQ(params[0].second.scalar_type(), torch::kFloat32);
  EXPECT_EQ(opt.state()[0].exp_avg.scalar_type(), torch::kFloat32);
  EXPECT_GT((params[0].second - before).abs().max().item<double>(), 0.0);
}

}  // namespace
}  // namespace baton
