// Activation checkpointing (train.activation_checkpointing: blocks): recomputing every block in
// backward gives bitwise the gradients and the update of keeping the activations, in float64,
// float32 and bf16 autocast, over a step of several micro-batches; and it does recompute.
#include <gtest/gtest.h>

#include "tiny_trainer.h"
#include "trainer/data/pad_collate.h"
#include "trainer/dist/process_group.h"
#include "trainer/model/recompute.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/train_step.h"

namespace baton {
namespace {

struct StepResult {
  std::vector<std::string> names;
  std::vector<torch::Tensor> grads, weights;
  double loss = 0;
};

StepResult OneStep(test::TinyTrainer& tiny, bool recompute, torch::ScalarType dtype) {
  tiny.dims.recompute_blocks = recompute;
  torch::manual_seed(3);
  VideoActionModel model(tiny.dims);
  if (dtype == torch::kFloat64) model->to(torch::kFloat64);
  std::vector<std::pair<std::string, torch::Tensor>> params = TrainableParameters(model);
  AdamW opt(params, tiny.config.optim);
  auto group = ProcessGroupHandle::Create(DistEnv{}, false);
  TrainStepper stepper(model, &opt, group.get(), tiny.config, *tiny.index.shape, dtype,
                       torch::kCPU, tiny.empty_text);
  std::vector<PaddedBatch> micro;
  double frames = 0;
  for (int64_t m = 0; m < 2; ++m) {
    auto eps = tiny.Episodes({2 * m, 2 * m + 1});
    for (const auto& e : eps) frames += double(e.frames);
    micro.push_back(PadCollate(eps, tiny.config.data.pad_multiple));
  }
  const StepStats st = stepper.Step(micro, /*step=*/2, frames, /*lr=*/1e-3, false);
  StepResult r;
  r.loss = st.loss;
  for (auto& [name, p] : params) {
    r.names.push_back(name);
    r.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    r.weights.push_back(p.detach().clone());
  }
  return r;
}

void ExpectBitwiseEqual(const StepResult& kept, const StepResult& recomputed) {
  EXPECT_EQ(kept.loss, recomputed.loss);
  ASSERT_EQ(kept.grads.size(), recomputed.grads.size());
  int64_t nonzero = 0;
  for (size_t i = 0; i < kept.grads.size(); ++i) {
    ASSERT_EQ(kept.grads[i].defined(), recomputed.grads[i].defined()) << kept.names[i];
    if (!kept.grads[i].defined()) continue;
    EXPECT_TRUE(torch::equal(kept.grads[i], recomputed.grads[i])) << kept.names[i];
    EXPECT_TRUE(torch::equal(kept.weights[i], recomputed.weights[i])) << kept.names[i];
    nonzero += kept.grads[i].abs().sum().item<double>() > 0;
  }
  EXPECT_GT(nonzero, int64_t(kept.grads.size()) / 2);  // the comparison is not vacuous
}

TEST(RecomputeTest, BlocksGiveBitwiseTheSameStepInFloat64Float32AndBf16) {
  test::TinyTrainer tiny(8, 3, 9);
  tiny.config.optim.grad_clip = 0.5;
  for (torch::ScalarType dtype : {torch::kFloat64, torch::kFloat32, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const int64_t before = RecomputeCount();
    const StepResult kept = OneStep(tiny, false, dtype);
    EXPECT_EQ(RecomputeCount(), before);
    const StepResult recomputed = OneStep(tiny, true, dtype);
    // Every block of both micro-batches ran again in backward.
    EXPECT_EQ(RecomputeCount() - before, 2 * tiny.dims.layers);
    ExpectBitwiseEqual(kept, recomputed);
  }
}

TEST(RecomputeTest, RunsTheFunctionAgainInBackwardAndPassesInputGradients) {
  int calls = 0;
  auto w = torch::randn({3, 3}, torch::kFloat64).requires_grad_(true);
  auto x = torch::randn({2, 3}, torch::kFloat64).requires_grad_(true);
  auto fn = [&](const std::vector<torch::Tensor>& in) {
    ++calls;
    return torch::tanh(in[0].matmul(w)) * in[1];
  };
  auto scale = torch::full({2, 3}, 2.0, torch::kFloat64);  // needs no gradient
  auto y = Recompute(fn, {x, scale});
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(y.grad_fn() == nullptr);
  y.sum().backward();
  EXPECT_EQ(calls, 2);
  auto gx = x.grad().clone(), gw = w.grad().clone();
  x.mutable_grad().reset();
  w.mutable_grad().reset();
  fn({x, scale}).sum().backward();
  EXPECT_TRUE(torch::equal(gx, x.grad()));
  EXPECT_TRUE(torch::equal(gw, w.grad()));
}

}  // namespace
}  // namespace baton
