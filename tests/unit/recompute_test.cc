// Activation checkpointing (train.activation_checkpointing: blocks, blocks+attention): recomputing
// every block (and inside it every self-attention call) in backward gives bitwise the gradients
// and the update of keeping the activations, in float64, float32 and bf16 autocast, over a step
// of several micro-batches; and it does recompute. Attention calls split below a bucket agree to
// float64 rounding (the keys' gradients are summed in another order).
#include <gtest/gtest.h>

#include "tiny_trainer.h"
#include "trainer/data/pad_collate.h"
#include "trainer/distributed/process_group.h"
#include "trainer/model/attention.h"
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

StepResult OneStep(test::TinyTrainer& tiny, bool recompute, torch::ScalarType dtype,
                   int64_t attention_entries = 0) {
  tiny.dims.recompute_blocks = recompute;
  tiny.dims.recompute_attention_entries = attention_entries;
  torch::manual_seed(3);
  VideoActionModel model(tiny.dims);
  model->to(test::TestDevice(), dtype == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32);
  std::vector<std::pair<std::string, torch::Tensor>> params = TrainableParameters(model);
  AdamW opt(params, tiny.config.optim);
  auto group = ProcessGroupHandle::Create(DistEnv{}, false);
  TrainStepper stepper(model, &opt, group.get(), tiny.config, *tiny.index.shape, dtype,
                       test::TestDevice(), tiny.empty_text);
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

// blocks+attention at its default cap: the tiny model's buckets are far below it, so each bucket
// is one recomputed call, nested in its recomputed block.
TEST(RecomputeTest, BlocksAndAttentionGiveBitwiseTheSameStepInFloat64Float32AndBf16) {
  test::TinyTrainer tiny(8, 3, 9);
  tiny.config.optim.grad_clip = 0.5;
  for (torch::ScalarType dtype : {torch::kFloat64, torch::kFloat32, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const StepResult kept = OneStep(tiny, false, dtype);
    const int64_t before = RecomputeCount();
    const StepResult recomputed = OneStep(tiny, true, dtype, kRecomputeCallEntries);
    // Every block of both micro-batches, and at least one attention call per block.
    EXPECT_GE(RecomputeCount() - before, 2 * 2 * tiny.dims.layers);
    ExpectBitwiseEqual(kept, recomputed);
  }
}

// Max |a - b| / max |a| over every gradient.
double RelativeGradientError(const StepResult& a, const StepResult& b) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < a.grads.size(); ++i) {
    if (!a.grads[i].defined()) continue;
    err = std::max(err, (a.grads[i] - b.grads[i]).abs().max().item<double>());
    scale = std::max(scale, a.grads[i].abs().max().item<double>());
  }
  return err / scale;
}

// A cap of one score entry puts every query group in its own call: many more recomputations, the
// same loss, the gradients to float64 rounding (and float32's).
TEST(RecomputeTest, AttentionSplitIntoOneGroupPerCallAgreesInFloat64) {
  test::TinyTrainer tiny(8, 3, 9);
  const StepResult kept = OneStep(tiny, false, torch::kFloat64);
  int64_t before = RecomputeCount();
  const StepResult whole = OneStep(tiny, true, torch::kFloat64, kRecomputeCallEntries);
  const int64_t whole_count = RecomputeCount() - before;
  before = RecomputeCount();
  const StepResult split = OneStep(tiny, true, torch::kFloat64, 1);
  const int64_t split_count = RecomputeCount() - before;
  EXPECT_GT(split_count, whole_count);
  EXPECT_EQ(kept.loss, split.loss);
  const double err = RelativeGradientError(kept, split);
  std::printf("blocks+attention, one group per call vs none (float64): gradients %.3g relative\n",
              err);
  EXPECT_LE(err, 1e-12);
  EXPECT_LE(RelativeGradientError(whole, split), 1e-12);
  // float32: its own rounding.
  const double err32 = RelativeGradientError(OneStep(tiny, false, torch::kFloat32),
                                             OneStep(tiny, true, torch::kFloat32, 1));
  std::printf("blocks+attention, one group per call vs none (float32): gradients %.3g relative\n",
              err32);
  EXPECT_LE(err32, 1e-5);
}

// The attention alone: split calls give the unsplit output bit for bit and the same query
// gradients (each query is in one call); key and value gradients agree to float64 rounding. One
// recomputation per call in backward, none with grad mode off.
TEST(RecomputeTest, SplitAttentionCallsEqualTheUnsplitBucket) {
  const PackedLayout l =
      BuildPackedLayout(8, 2, 2, 2, {{5, 2, 3}, {8, 1, 6}, {3, 3, 1}, {6, 4, 9}});
  const int64_t H = 2, hd = 6;
  // Every group padded into one bucket: the largest bucket to split.
  const LayoutTensors lt =
      MakeLayoutTensors(l, hd, 10000.0, test::TestDevice(), torch::kFloat64, int64_t(1) << 40);
  ASSERT_EQ(lt.calls.size(), size_t(1));
  const AttentionCall& c = lt.calls[0];
  torch::manual_seed(4);
  auto q = test::Leaf({l.tokens, H, hd}), k = test::Leaf({l.tokens, H, hd}),
       v = test::Leaf({l.tokens, H, hd});
  auto w = torch::randn({l.tokens, H, hd}, torch::kFloat64).to(test::TestDevice());
  auto kept = BlockSparseAttention(q, k, v, lt);
  auto gk = torch::autograd::grad({(kept * w).sum()}, {q, k, v});

  // Caps: one group per call, three groups per call, the whole bucket.
  const int64_t group_entries = H * c.lq * c.lk;
  for (const int64_t cap : {int64_t(1), 3 * group_entries, kRecomputeCallEntries}) {
    SCOPED_TRACE("cap " + std::to_string(cap));
    const int64_t per_call = GroupsPerCall(H, c.lq, c.lk, cap);
    const int64_t calls = (c.groups + per_call - 1) / per_call;
    EXPECT_EQ(calls, cap == 1 ? c.groups : cap == 3 * group_entries ? (c.groups + 2) / 3 : 1);
    const int64_t before = RecomputeCount();
    auto out = BlockSparseAttention(q, k, v, lt, cap);
    EXPECT_TRUE(torch::equal(out, kept));
    auto gs = torch::autograd::grad({(out * w).sum()}, {q, k, v});
    EXPECT_EQ(RecomputeCount() - before, calls);
    EXPECT_TRUE(torch::equal(gs[0], gk[0]));
    for (int i = 1; i < 3; ++i) {
      const double rel = ((gs[i] - gk[i]).abs().max() / gk[i].abs().max()).item<double>();
      EXPECT_LE(rel, 1e-14) << "grad " << i;
      if (calls == 1) {
        EXPECT_TRUE(torch::equal(gs[i], gk[i])) << "grad " << i;
      }
    }
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::equal(BlockSparseAttention(q, k, v, lt, cap), kept));
  }
}

TEST(RecomputeTest, RunsTheFunctionAgainInBackwardAndPassesInputGradients) {
  int calls = 0;
  auto w = test::Leaf({3, 3});
  auto x = test::Leaf({2, 3});
  auto fn = [&](const std::vector<torch::Tensor>& in) {
    ++calls;
    return torch::tanh(in[0].matmul(w)) * in[1];
  };
  auto scale = torch::full({2, 3}, 2.0, torch::kFloat64).to(test::TestDevice());  // no gradient
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
