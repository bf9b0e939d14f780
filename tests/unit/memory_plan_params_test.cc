// The memory plan's parameter table against the model itself: same names, sizes, order and
// frozen set, so the plan's weight, gradient and optimizer figures count what libtorch allocates.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "trainer/memory/memory_plan.h"
#include "trainer/model/video_action_model.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/train_step.h"

namespace baton {
namespace {

TEST(MemoryPlanParams, MatchTheModelsParameters) {
  ModelDims d;
  d.channels = 3, d.patch = 2, d.action_dim = 5, d.text_dim = 7;
  d.dim = 24, d.heads = 2, d.layers = 3, d.ffn_dim = 40, d.freq_dim = 16;
  VideoActionModel model(d);
  PlanModel m;
  m.channels = 3, m.patch = 2, m.action_dim = 5, m.text_dim = 7;
  m.dim = 24, m.heads = 2, m.layers = 3, m.ffn_dim = 40, m.freq_dim = 16;
  const auto plan = ModelParameters(m);
  const auto named = model->named_parameters();
  ASSERT_EQ(plan.size(), named.size());
  size_t i = 0;
  for (const auto& p : named) {
    EXPECT_EQ(plan[i].name, p.key()) << i;
    EXPECT_EQ(plan[i].numel, p.value().numel()) << p.key();
    EXPECT_EQ(plan[i].trainable, p.value().requires_grad()) << p.key();
    EXPECT_EQ(plan[i].shape, p.value().sizes().vec()) << p.key();
    ++i;
  }
}

// optim.master sharded: the plan counts a bf16 copy for exactly the parameters the trainer splits.
TEST(MemoryPlanParams, Bf16CopiesAreTheOnesTheTrainerSplits) {
  ModelDims d;
  d.channels = 3, d.patch = 2, d.action_dim = 5, d.text_dim = 7;
  d.dim = 24, d.heads = 2, d.layers = 2, d.ffn_dim = 40, d.freq_dim = 16;
  VideoActionModel model(d);
  PlanModel m;
  m.channels = 3, m.patch = 2, m.action_dim = 5, m.text_dim = 7;
  m.dim = 24, m.heads = 2, m.layers = 2, m.ffn_dim = 40, m.freq_dim = 16;
  std::vector<std::pair<std::string, torch::Tensor>> params;
  for (const auto& p : model->named_parameters()) {
    if (p.value().requires_grad()) params.emplace_back(p.key(), p.value());
  }
  AdamW optimizer(params, OptimSection{});
  const std::vector<bool> split = MatmulParameters(model, optimizer);
  std::map<std::string, bool> planned;
  for (const auto& q : ModelParameters(m)) planned[q.name] = HoldsBf16Copy(q);
  ASSERT_EQ(split.size(), optimizer.state().size());
  int copies = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    const std::string& name = optimizer.state()[i].name;
    ASSERT_EQ(planned.count(name), 1u) << name;
    EXPECT_EQ(planned[name], bool(split[i])) << name;
    copies += split[i] ? 1 : 0;
  }
  EXPECT_GT(copies, 10);  // the check compares something
}

}  // namespace
}  // namespace baton
