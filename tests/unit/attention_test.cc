#include "trainer/model/attention.h"

#include <gtest/gtest.h>

#include "tiny_trainer.h"
#include "trainer/data/pad_collate.h"
#include "trainer/model/op_counter.h"
#include "trainer/objective/flow_matching.h"

namespace baton {
namespace {

PackedLayout MixedLayout() {
  // Four samples of different lengths, chunks and windows, with padded frames (Fp = 8).
  return BuildPackedLayout(8, 2, 2, 2, {{5, 2, 3}, {8, 1, 6}, {3, 3, 1}, {6, 4, 9}});
}

// The batched path against the dense oracle, with the plan's buckets at both extremes (one call
// per distinct key count, and every group padded into one call) and at the default.
TEST(AttentionTest, BlockSparseEqualsDenseReferenceForwardAndBackward) {
  const PackedLayout l = MixedLayout();
  const int64_t H = 2, hd = 6;
  torch::manual_seed(0);
  auto q = test::Leaf({l.tokens, H, hd}), k = test::Leaf({l.tokens, H, hd}),
       v = test::Leaf({l.tokens, H, hd});
  auto w = torch::randn({l.tokens, H, hd}, torch::kFloat64).to(test::TestDevice());
  auto dense = DenseMaskedAttention(q, k, v, l);
  auto gd = torch::autograd::grad({(dense * w).sum()}, {q, k, v});

  std::vector<int64_t> calls;
  for (const int64_t call_cost : {int64_t(0), kAttentionCallCostPairs, int64_t(1) << 40}) {
    SCOPED_TRACE("call cost " + std::to_string(call_cost));
    LayoutTensors lt =
        MakeLayoutTensors(l, hd, 10000.0, test::TestDevice(), torch::kFloat64, call_cost);
    calls.push_back(static_cast<int64_t>(lt.calls.size()));
    auto sparse = BlockSparseAttention(q, k, v, lt);
    auto gs = torch::autograd::grad({(sparse * w).sum()}, {q, k, v});
    EXPECT_LT((sparse - dense).abs().max().item<double>(), 1e-13);
    for (int i = 0; i < 3; ++i) {
      EXPECT_LT((gs[i] - gd[i]).abs().max().item<double>(), 1e-12) << "grad " << i;
      EXPECT_TRUE(torch::isfinite(gs[i]).all().item<bool>());
      EXPECT_TRUE(torch::isfinite(gd[i]).all().item<bool>());
    }
    // Padded-frame rows (fully masked) are exact zeros, never NaN.
    for (int64_t t = 0; t < l.tokens; ++t) {
      if (l.seq_id[t] >= 0) continue;
      EXPECT_EQ(sparse[t].abs().sum().item<double>(), 0.0);
      EXPECT_EQ(dense[t].abs().sum().item<double>(), 0.0);
      EXPECT_EQ(gs[0][t].abs().sum().item<double>(), 0.0);
    }
    // Work follows the allowed pairs, not T^2; padding is counted in what is computed.
    const int64_t allowed = AllowedPairs(lt);
    EXPECT_GT(allowed, 0);
    EXPECT_GE(lt.computed_pairs, allowed);
    EXPECT_LT(lt.computed_pairs, l.tokens * l.tokens / 4);
  }
  EXPECT_GT(calls[0], calls[1]);
  EXPECT_EQ(calls[2], 1);
}

// Top-level ATen ops of one layer's attention, forward and backward: self-attention over the
// row and the text cross-attention.
int64_t AttentionOpsPerLayer(const PackedLayout& l, const LayoutTensors& lt) {
  const int64_t H = 2, hd = 6, L = 3;
  auto q = test::Leaf({l.tokens, H, hd}), k = test::Leaf({l.tokens, H, hd}),
       v = test::Leaf({l.tokens, H, hd});
  auto ck = test::Leaf({l.batch, L, H, hd}), cv = test::Leaf({l.batch, L, H, hd});
  OpCounter counter;
  auto out = BlockSparseAttention(q, k, v, lt) + TextCrossAttention(q, ck, cv, lt);
  out.sum().backward();
  return counter.ops();
}

TEST(AttentionTest, PackingReducesAttentionOpsPerLayer) {
  const PackedLayout packed = MixedLayout();
  const int64_t hd = 6;
  const int64_t packed_ops = AttentionOpsPerLayer(
      packed, MakeLayoutTensors(packed, hd, 10000.0, test::TestDevice(), torch::kFloat64));
  int64_t single_ops = 0, max_single = 0;
  for (const SampleSpec& s : packed.samples) {
    const PackedLayout one = BuildPackedLayout(packed.padded_frames, packed.patch_rows,
                                               packed.patch_cols, packed.action_steps, {s});
    const int64_t ops = AttentionOpsPerLayer(
        one, MakeLayoutTensors(one, hd, 10000.0, test::TestDevice(), torch::kFloat64));
    single_ops += ops;
    max_single = std::max(max_single, ops);
  }
  std::printf(
      "attention ops per layer (forward + backward): packed row of 4 samples %lld, the "
      "same samples as 4 rows %lld\n",
      static_cast<long long>(packed_ops), static_cast<long long>(single_ops));
  EXPECT_GT(max_single, 10);  // the counter sees the ops at all
  // Four samples in one row must cost clearly fewer ops than four rows (at most two of one
  // row's worth: the samples' key counts may need a second bucket).
  EXPECT_LT(packed_ops, single_ops);
  EXPECT_LE(packed_ops, 2 * max_single);
}

// The batched cross-attention against a per-sample loop over the valid tokens.
TEST(AttentionTest, TextCrossAttentionEqualsPerSampleLoop) {
  const PackedLayout l = MixedLayout();
  const int64_t H = 2, hd = 6, L = 3;
  const torch::Device dev = test::TestDevice();
  LayoutTensors lt = MakeLayoutTensors(l, hd, 10000.0, dev, torch::kFloat64);
  torch::manual_seed(1);
  auto q = test::Leaf({l.tokens, H, hd});
  auto k = test::Leaf({l.batch, L, H, hd}), v = test::Leaf({l.batch, L, H, hd});
  auto w = torch::randn({l.tokens, H, hd}, torch::kFloat64).to(dev);

  auto batched = TextCrossAttention(q, k, v, lt);
  auto gb = torch::autograd::grad({(batched * w).sum()}, {q, k, v});
  auto ref = torch::zeros({l.tokens, H, hd}, torch::TensorOptions(torch::kFloat64).device(dev));
  for (int64_t b = 0; b < l.batch; ++b) {
    std::vector<int64_t> tok;
    for (int64_t t = 0; t < l.tokens; ++t) {
      if (l.seq_id[t] == b) tok.push_back(t);
    }
    if (tok.empty()) continue;
    auto idx = torch::tensor(tok).to(dev);
    auto qb = q.index_select(0, idx).transpose(0, 1);  // [H, n, hd]
    auto p = torch::softmax(torch::matmul(qb, k[b].permute({1, 2, 0})) / std::sqrt(double(hd)), -1);
    ref = ref.index_copy(0, idx, torch::matmul(p, v[b].transpose(0, 1)).transpose(0, 1));
  }
  auto gr = torch::autograd::grad({(ref * w).sum()}, {q, k, v});
  EXPECT_LT((batched - ref).abs().max().item<double>(), 1e-14);
  for (int i = 0; i < 3; ++i) EXPECT_LT((gb[i] - gr[i]).abs().max().item<double>(), 1e-13) << i;
  for (int64_t t = 0; t < l.tokens; ++t) {
    if (l.seq_id[t] >= 0) continue;
    EXPECT_EQ(batched[t].abs().sum().item<double>(), 0.0);
    EXPECT_EQ(gb[0][t].abs().sum().item<double>(), 0.0);
  }
}

class ModelMaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = tiny_.Model();
    tiny_.config.objective.chunk_min = tiny_.config.objective.chunk_max = 2;
    tiny_.config.objective.window_min = tiny_.config.objective.window_max = 64;
    auto eps = tiny_.Episodes({1, 2});  // episode 1 is the longest (9 frames)
    mb_ = PrepareMicroBatch(PadCollate(eps, 4), 5, 0, eps[0].shape, tiny_.config.objective,
                            tiny_.dims, torch::kFloat64, test::TestDevice(), tiny_.empty_text);
    base_ = Run(mb_.inputs);
  }
  ModelOutputs Run(const ModelInputs& in) {
    torch::NoGradGuard ng;
    return model_->forward(in, mb_.layout, mb_.layout_tensors);
  }
  test::TinyTrainer tiny_;
  VideoActionModel model_{nullptr};
  MicroBatch mb_;
  ModelOutputs base_;
};

TEST_F(ModelMaskTest, NoisyVideoOfChunkKIsUnaffectedByLaterCleanChunks) {
  // Chunk 2: frames 0-1 are chunk 0, 2-3 chunk 1. Change the clean copy from frame 4 on.
  ModelInputs in = mb_.inputs;
  in.video_clean = in.video_clean.clone();
  in.action_clean = in.action_clean.clone();
  using torch::indexing::Slice;
  in.video_clean.index_put_({0, Slice(), Slice(4, torch::indexing::None)}, 7.0);
  in.action_clean.index_put_({0, Slice(), Slice(4, torch::indexing::None)}, -3.0);
  const ModelOutputs changed = Run(in);
  auto early = Slice(0, 4);
  EXPECT_EQ((changed.video.index({0, Slice(), early}) - base_.video.index({0, Slice(), early}))
                .abs()
                .max()
                .item<double>(),
            0.0);
  EXPECT_EQ((changed.action.index({0, Slice(), early}) - base_.action.index({0, Slice(), early}))
                .abs()
                .max()
                .item<double>(),
            0.0);
  // ... while later noisy frames do see them (the test can fail).
  EXPECT_GT((changed.video.index({0, Slice(), Slice(4, 9)}) -
             base_.video.index({0, Slice(), Slice(4, 9)}))
                .abs()
                .max()
                .item<double>(),
            1e-6);
}

TEST_F(ModelMaskTest, CleanOutputsAreIndependentOfNoisyInputs) {
  ModelInputs in = mb_.inputs;
  in.video_noisy =
      torch::randn(in.video_noisy.sizes(), torch::kFloat64).to(in.video_noisy.options()) * 5;
  in.action_noisy =
      torch::randn(in.action_noisy.sizes(), torch::kFloat64).to(in.action_noisy.options()) * 5;
  const ModelOutputs changed = Run(in);
  const PackedLayout& l = mb_.layout;
  double clean_diff = 0, noisy_diff = 0;
  for (int64_t t = 0; t < l.tokens; ++t) {
    if (l.seq_id[t] < 0) continue;
    const double d = (changed.hidden[t] - base_.hidden[t]).abs().max().item<double>();
    (l.clean[t] ? clean_diff : noisy_diff) = std::max(l.clean[t] ? clean_diff : noisy_diff, d);
  }
  EXPECT_EQ(clean_diff, 0.0);
  EXPECT_GT(noisy_diff, 1e-6);
}

TEST_F(ModelMaskTest, DifferentSequencesNeverInteract) {
  ModelInputs in = mb_.inputs;
  for (auto* t : {&in.video_noisy, &in.video_clean, &in.action_noisy, &in.action_clean, &in.text}) {
    *t = t->clone();
    (*t)[1].normal_();
  }
  in.t_video_noisy = in.t_video_noisy.clone();
  in.t_video_noisy[1].fill_(999.0);
  const ModelOutputs changed = Run(in);
  EXPECT_EQ((changed.video[0] - base_.video[0]).abs().max().item<double>(), 0.0);
  EXPECT_EQ((changed.action[0] - base_.action[0]).abs().max().item<double>(), 0.0);
  EXPECT_GT((changed.video[1] - base_.video[1]).abs().max().item<double>(), 1e-6);
}

TEST_F(ModelMaskTest, DenseAndSparsePathsAgreeInTheFullModel) {
  torch::NoGradGuard ng;
  auto dense = model_->forward(mb_.inputs, mb_.layout, mb_.layout_tensors, AttentionPath::kDense);
  EXPECT_LT((dense.video - base_.video).abs().max().item<double>(), 1e-12);
  EXPECT_LT((dense.action - base_.action).abs().max().item<double>(), 1e-12);
}

}  // namespace
}  // namespace baton
