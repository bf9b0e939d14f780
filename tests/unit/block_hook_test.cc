// The model's block hook (trainer/model/block_hook.h): called at every block boundary in the
// order the header states, forward and backward, with and without activation checkpointing; it
// observes and never changes a gradient (bitwise the gradients of a forward without one); and an
// exception thrown from it in backward comes out of backward() as itself, leaving nothing behind
// (the next forward and backward give bitwise the gradients of an untouched model). This is what
// the train step's abandon on a stop signal relies on.
#include <gtest/gtest.h>

#include "tiny_trainer.h"
#include "trainer/data/pad_collate.h"
#include "trainer/model/block_hook.h"
#include "trainer/train/train_step.h"

namespace baton {
namespace {

struct Thrown : std::exception {};

// One micro-batch's forward, loss and backward; the parameters' gradients after it (`fresh`:
// from none, else accumulated onto those there).
std::vector<torch::Tensor> Gradients(test::TinyTrainer& tiny, VideoActionModel& model,
                                     bool fresh = true) {
  if (fresh) {
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
  }
  MicroBatch mb;
  LossSums loss =
      ForwardLoss(model, tiny.config, PadCollate(tiny.Episodes({0, 1}), 4), /*step=*/1,
                  *tiny.index.shape, torch::kFloat64, test::TestDevice(), tiny.empty_text,
                  /*global_frames=*/10.0, &mb);
  loss.total.backward();
  std::vector<torch::Tensor> out;
  for (auto& p : model->parameters()) {
    if (p.grad().defined()) out.push_back(p.grad().clone());
  }
  return out;
}

TEST(BlockHookTest, CalledAtEveryBoundaryInOrderAndChangesNoGradient) {
  for (bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "recompute" : "kept");
    test::TinyTrainer tiny(4, 3, 6);
    tiny.dims.layers = 3;
    tiny.dims.recompute_blocks = recompute;
    VideoActionModel plain = tiny.Model();
    const std::vector<torch::Tensor> want = Gradients(tiny, plain);

    VideoActionModel watched = tiny.Model();
    std::vector<std::pair<BlockPass, int64_t>> seen;
    std::vector<torch::Tensor> got;
    {
      ScopedBlockHook hook([&seen](BlockPass pass, int64_t block) {
        seen.push_back({pass, block});
      });
      got = Gradients(tiny, watched);
    }
    std::vector<std::pair<BlockPass, int64_t>> order;
    for (int64_t b = 0; b <= 3; ++b) order.push_back({BlockPass::kForward, b});
    for (int64_t b = 2; b >= -1; --b) order.push_back({BlockPass::kBackward, b});
    EXPECT_EQ(seen, order);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_GT(got.size(), 20u);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(torch::equal(got[i], want[i])) << i;

    // Out of scope, no hook is called.
    seen.clear();
    Gradients(tiny, watched);
    EXPECT_TRUE(seen.empty());
  }
}

TEST(BlockHookTest, AThrowInBackwardComesOutAsItselfAndLeavesNothingBehind) {
  for (bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "recompute" : "kept");
    test::TinyTrainer tiny(4, 3, 6);
    tiny.dims.layers = 3;
    tiny.dims.recompute_blocks = recompute;
    VideoActionModel untouched = tiny.Model();
    const std::vector<torch::Tensor> want = Gradients(tiny, untouched);

    VideoActionModel model = tiny.Model();
    for (const auto& [pass, at] : {std::pair{BlockPass::kBackward, int64_t(1)},
                                   std::pair{BlockPass::kForward, int64_t(2)}}) {
      bool caught = false;
      {
        ScopedBlockHook hook([pass = pass, at = at](BlockPass p, int64_t block) {
          if (p == pass && block == at) throw Thrown();
        });
        try {
          Gradients(tiny, model);
        } catch (const Thrown&) {
          caught = true;
        }
      }
      EXPECT_TRUE(caught);
    }
    // As the train step does after an abandon: zero what the partial passes accumulated.
    for (auto& p : model->parameters()) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    const std::vector<torch::Tensor> got = Gradients(tiny, model, /*fresh=*/false);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(torch::equal(got[i], want[i])) << i;
  }
}

}  // namespace
}  // namespace baton
