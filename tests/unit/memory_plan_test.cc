// MemoryPlan: the per-rank byte counts of the categories that follow from the sizes alone.
#include "trainer/memory/memory_plan.h"
#include "trainer/memory/checkpoint_bytes.h"

#include <gtest/gtest.h>

#include "trainer/model/attention_plan.h"

namespace baton {
namespace {

PlanModel Real5B() {
  PlanModel m;
  m.channels = 48, m.patch = 2, m.action_dim = 30, m.text_dim = 4096;
  m.dim = 3072, m.heads = 24, m.layers = 30, m.ffn_dim = 14336, m.freq_dim = 256;
  return m;
}

PlanRow Row(const PlanModel& m, int64_t batch, int64_t frames, int64_t action_steps = 4) {
  PlanRow r;
  r.batch = batch, r.padded_frames = frames, r.height = 24, r.width = 20;
  r.action_steps = action_steps, r.text_len = 512;
  EXPECT_TRUE(PlanRowAttention(&r, std::vector<int64_t>(size_t(batch), frames), m.patch,
                               m.dim / m.heads, 1, 4, 64, m.heads)
                  .ok());
  return r;
}

TEST(CheckpointBytes, EachOwnerWritesItsMomentsMasterAndExport) {
  // Three trainable tensors of 100, 100 and 200 elements and one frozen of 10. On 2 ranks the
  // element-balanced plan gives rank 0 the first two, rank 1 the third; the frozen one (index 3)
  // goes to 3 % 2 = rank 1 and has no moments.
  const std::vector<PlanParameter> params = {{"a", 100, true, {100}},
                                             {"b", 100, true, {100}},
                                             {"c", 200, true, {200}},
                                             {"frozen", 10, false, {10}}};
  // fp32 master, bf16 export: 2 + 4 bytes of weights and 8 of moments per trainable element.
  const CheckpointBytes two = PlanCheckpointBytes(params, 2, 4, 2);
  ASSERT_EQ(two.rank_bytes.size(), 2u);
  EXPECT_EQ(two.rank_bytes[0], 200 * (6 + 8));
  EXPECT_EQ(two.rank_bytes[1], 200 * (6 + 8) + 10 * 6);
  EXPECT_EQ(two.total, 400 * 14 + 60);
  EXPECT_EQ(two.largest, two.rank_bytes[1]);
  // An export in the master dtype is the master copy: no second weight file.
  const CheckpointBytes same = PlanCheckpointBytes(params, 1, 4, 4);
  EXPECT_EQ(same.total, 400 * (4 + 8) + 10 * 4);
  EXPECT_FALSE(same.overflow);
  // Beyond int64 is flagged, never wrapped.
  EXPECT_TRUE(PlanCheckpointBytes({{"huge", int64_t(1) << 61, true, {int64_t(1) << 61}}}, 1, 8, 8)
                  .overflow);
}

TEST(MemoryPlan, ParameterCountOfTheRealModel) {
  const auto params = ModelParameters(Real5B());
  EXPECT_EQ(params.size(), size_t(29 + 27 * 30));
  int64_t total = 0, frozen = 0;
  for (const auto& p : params) {
    total += p.numel;
    if (!p.trainable) frozen += p.numel;
  }
  // Per block 8 D^2 + 2 D Fd + 16 D + Fd; the frozen text projection is Dt D + D^2 + 2 D.
  const int64_t D = 3072, Fd = 14336;
  EXPECT_EQ(frozen, 4096 * D + D * D + 2 * D);
  const int64_t block = 8 * D * D + 2 * D * Fd + 16 * D + Fd;
  EXPECT_GT(total, 30 * block);
  EXPECT_NEAR(double(total) / 1e9, 5.09, 0.02);
}

TEST(MemoryPlan, ShardingDividesTheOptimizerStateAndGradientsHeld) {
  const PlanModel m = Real5B();
  const PlanRow r = Row(m, 4, 40);
  PlanSettings s;
  s.dtype = DType::kBFloat16;
  s.cuda = true;
  s.world = 8;
  const MemoryPlan none = MakeMemoryPlan(m, r, s);
  s.shard = ShardMode::kOptimizer;
  const MemoryPlan opt = MakeMemoryPlan(m, r, s);
  s.shard = ShardMode::kGradients;
  const MemoryPlan grad = MakeMemoryPlan(m, r, s);
  EXPECT_EQ(none.weights, none.parameters * 4);  // fp32 master weights under bf16
  EXPECT_EQ(none.optimizer, 8 * none.trainable);
  EXPECT_EQ(none.gradients_held, none.gradients);
  // Whole-parameter ownership: within one parameter's worth of 1/W.
  EXPECT_NEAR(double(opt.optimizer) / double(none.optimizer), 1.0 / 8, 0.01);
  EXPECT_EQ(opt.gradients, none.gradients);  // the full accumulation buffer in every mode
  EXPECT_EQ(grad.gradients, none.gradients);
  EXPECT_NEAR(double(grad.gradients_held) / double(none.gradients), 1.0 / 8, 0.01);
  EXPECT_EQ(none.total - opt.total, none.optimizer - opt.optimizer);
  EXPECT_EQ(none.autocast_copies, 2 * none.trainable);
}

TEST(MemoryPlan, ShardedMasterHoldsBf16CopiesAndTheOwnedFp32Master) {
  const PlanModel m = Real5B();
  const PlanRow r = Row(m, 4, 36, 16);  // packed rows of 4 episodes of 36 frames
  PlanSettings s;
  s.dtype = DType::kBFloat16;
  s.cuda = true;
  s.world = 8;
  s.shard = ShardMode::kOptimizer;
  s.checkpointing = ActivationCheckpointing::kBlocksAttention;
  const MemoryPlan replicated = MakeMemoryPlan(m, r, s);
  s.master = OptimMaster::kSharded;
  const MemoryPlan sharded = MakeMemoryPlan(m, r, s);
  int64_t copied = 0, small = 0, frozen = 0;
  for (const auto& q : ModelParameters(m)) {
    if (!q.trainable) {
      frozen += q.numel;
      EXPECT_FALSE(HoldsBf16Copy(q)) << q.name;
    } else if (HoldsBf16Copy(q)) {
      copied += q.numel;
    } else {
      small += q.numel;
      // Norms, scale-shift tables, the input projections, biases after a 3-D matmul.
      EXPECT_TRUE(q.name.find("norm") != std::string::npos ||
                  q.name.find("scale_shift_table") != std::string::npos ||
                  q.name.rfind("patch_embedding_mlp.", 0) == 0 ||
                  q.name.rfind("action_embedder.", 0) == 0 ||
                  q.name.find(".bias") != std::string::npos)
          << q.name;
    }
  }
  EXPECT_EQ(sharded.bf16_copied, copied);
  EXPECT_LT(small, copied / 1000);  // the fp32 rest is a rounding error of the model
  EXPECT_EQ(sharded.weights, 2 * copied + 4 * (small + frozen));
  EXPECT_EQ(sharded.autocast_copies, 0);
  // The owner's master is its share of the trainable elements, as its AdamW moments are.
  EXPECT_EQ(sharded.master_share * 2, sharded.optimizer);
  // One fp32 accumulation buffer, and the bf16 gradients of the two largest copies in flight
  // (the two time projections, D x 6D each).
  const int64_t in_flight = 2 * (2 * 3072 * 6 * 3072);
  EXPECT_EQ(sharded.gradients, replicated.gradients + in_flight);
  EXPECT_EQ(sharded.optimizer, replicated.optimizer);
  EXPECT_EQ(replicated.total - sharded.total,
            (replicated.weights + replicated.autocast_copies) -
                (sharded.weights + sharded.master_share + in_flight));
  // 4-episode rows (39,168 tokens) fit 80 GiB with room left: at most 76 GiB.
  EXPECT_EQ(r.tokens, 39168);
  EXPECT_GT(replicated.total, int64_t(80) << 30);
  EXPECT_LE(sharded.total, int64_t(76) << 30);
  // float32 computes on the master itself: the layout changes no figure.
  s.dtype = DType::kFloat32;
  const MemoryPlan f32_sharded = MakeMemoryPlan(m, r, s);
  s.master = OptimMaster::kReplicated;
  const MemoryPlan f32 = MakeMemoryPlan(m, r, s);
  EXPECT_EQ(f32_sharded.total, f32.total);
  EXPECT_EQ(f32_sharded.master_share, 0);
}

TEST(MemoryPlan, AsyncCheckpointSnapshotIsTheRanksShareOfTheState) {
  const PlanModel m = Real5B();
  const PlanRow r = Row(m, 1, 8);
  PlanSettings s;  // float32, CPU, one rank
  const MemoryPlan sync = MakeMemoryPlan(m, r, s);
  EXPECT_EQ(sync.checkpoint_snapshot, 0);
  s.async_checkpoint = true;
  const MemoryPlan one = MakeMemoryPlan(m, r, s);
  int64_t trainable_params = 0;
  for (const auto& q : ModelParameters(m)) trainable_params += q.trainable ? 1 : 0;
  // Moments and step counts, and every weight once (fp32 export = the master dtype).
  EXPECT_EQ(one.checkpoint_snapshot, 8 * one.trainable + 8 * trainable_params + 4 * one.parameters);
  EXPECT_EQ(one.total - sync.total, one.checkpoint_snapshot);  // CPU: the same memory
  s.export_dtype = ExportDType::kBf16;  // the export beside the exact master weights
  const MemoryPlan bf16 = MakeMemoryPlan(m, r, s);
  EXPECT_EQ(bf16.checkpoint_snapshot - one.checkpoint_snapshot, 2 * one.parameters);
  s.export_dtype = ExportDType::kFp32;
  s.world = 8;  // each rank snapshots what it writes: about 1/8 of the trainable state
  const MemoryPlan eight = MakeMemoryPlan(m, r, s);
  EXPECT_LT(eight.checkpoint_snapshot, one.checkpoint_snapshot / 6);
  s.cuda = true;  // host memory, not on the device
  s.world = 1;
  const MemoryPlan gpu = MakeMemoryPlan(m, r, s);
  s.async_checkpoint = false;
  EXPECT_EQ(gpu.checkpoint_snapshot, one.checkpoint_snapshot);
  EXPECT_EQ(gpu.total, MakeMemoryPlan(m, r, s).total);
}

TEST(MemoryPlan, CheckpointingKeepsOneBlockOfActivations) {
  const PlanModel m = Real5B();
  const PlanRow r = Row(m, 4, 40);
  EXPECT_EQ(r.tokens, 2 * 4 * 40 * (12 * 10 + 4));
  PlanSettings s;
  s.dtype = DType::kBFloat16;
  const ActivationBytes a = PlanActivations(m, r, s);
  EXPECT_EQ(a.none - a.blocks, (m.layers - 1) * a.per_block - m.layers * a.block_inputs);
  EXPECT_LT(a.blocks * 5, a.none);
  s.checkpointing = ActivationCheckpointing::kBlocks;
  const MemoryPlan p = MakeMemoryPlan(m, r, s);
  EXPECT_EQ(p.activations_used, a.blocks);
  EXPECT_EQ(p.total, p.total_blocks);
  EXPECT_EQ(p.total_none - p.total_blocks, a.none - a.blocks);
}

// blocks+attention: the block being recomputed keeps one attention call's scores, not the layer's.
TEST(MemoryPlan, RecomputedAttentionKeepsOneCallOfScores) {
  const PlanModel m = Real5B();
  const PlanRow r = Row(m, 4, 40);
  // The split bounds one call (a group alone may exceed the cap; these do not).
  EXPECT_GT(r.call_pairs, 0);
  EXPECT_LE(m.heads * r.call_pairs, kRecomputeCallEntries);
  EXPECT_LT(r.call_pairs * 10, r.computed_pairs);
  PlanSettings s;
  s.dtype = DType::kBFloat16;
  s.cuda = true;
  const ActivationBytes a = PlanActivations(m, r, s);
  // Everything but the recomputed block and the backward's transients is as with blocks.
  EXPECT_EQ(a.blocks - a.per_block - a.working,
            a.blocks_attention - a.per_block_attention - a.working_attention);
  EXPECT_GE(a.working_attention, a.attention_call);
  // The layer's scores (fp32 + bf16 under CUDA autocast) are what blocks+attention saves, less
  // the head-major q, k, v the calls keep.
  EXPECT_GE(a.per_block - a.per_block_attention, m.heads * r.computed_pairs * 6);
  EXPECT_LT(a.attention_call * 4, a.per_block - a.per_block_attention);
  EXPECT_LT(a.blocks_attention * 2, a.blocks);
  s.checkpointing = ActivationCheckpointing::kBlocksAttention;
  const MemoryPlan p = MakeMemoryPlan(m, r, s);
  EXPECT_EQ(p.activations_used, a.blocks_attention);
  EXPECT_EQ(p.total, p.total_blocks_attention);
  EXPECT_EQ(p.total_blocks - p.total_blocks_attention, a.blocks - a.blocks_attention);
}

TEST(MemoryPlan, ActivationsGrowWithTheRowAndTheDtype) {
  PlanModel m;  // the small default model
  const PlanRow short_row = Row(m, 2, 8), long_row = Row(m, 2, 16);
  PlanSettings s;
  const ActivationBytes a = PlanActivations(m, short_row, s), b = PlanActivations(m, long_row, s);
  EXPECT_GT(b.per_block, a.per_block * 3 / 2);
  s.dtype = DType::kFloat64;
  const ActivationBytes c = PlanActivations(m, short_row, s);
  EXPECT_EQ(c.per_block, 2 * a.per_block);
  // The longest window and chunk give at least the attention work of the smallest ones.
  PlanRow narrow = short_row;
  ASSERT_TRUE(PlanRowAttention(&narrow, {8, 8}, m.patch, m.dim / m.heads, 1, 1, 4, m.heads).ok());
  EXPECT_LE(narrow.computed_pairs, short_row.computed_pairs);
  EXPECT_EQ(narrow.tokens, short_row.tokens);
}

TEST(MemoryPlan, OneRankHasNoCollectiveBuffers) {
  PlanModel m;
  const PlanRow r = Row(m, 1, 4);
  PlanSettings s;
  EXPECT_EQ(MakeMemoryPlan(m, r, s).collective_buffers, 0);
  s.world = 2;
  const MemoryPlan small = MakeMemoryPlan(m, r, s);
  EXPECT_EQ(small.collective_buffers, 2 * small.gradients);  // the whole model is one bucket
  EXPECT_EQ(MakeMemoryPlan(Real5B(), r, s).collective_buffers, 2 * s.bucket_bytes);
}

// A row whose layout would be enormous (one lying episode length, or absurd latent sizes) is
// refused from its sizes alone, before anything is built: this returns at once instead of
// allocating tens of GiB.
TEST(MemoryPlan, RefusesARowTooLargeToPlanBeforeBuildingIt) {
  PlanModel m;
  PlanRow r;
  r.batch = 2, r.padded_frames = 1 << 20, r.height = 64, r.width = 64;
  r.action_steps = 4, r.text_len = 8;
  const Status st =
      PlanRowAttention(&r, {1 << 20, 1 << 20}, m.patch, m.dim / m.heads, 1, 4, 1 << 20, m.heads);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("too large to plan"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("1048576 latent frames"), std::string::npos) << st.message();
  EXPECT_EQ(r.tokens, 0);  // nothing was planned
  // Sizes whose products leave int64 are refused the same way, not wrapped.
  PlanRow huge = r;
  huge.height = huge.width = int64_t(1) << 31;
  const Status wrapped = PlanRowAttention(&huge, {1 << 20, 1 << 20}, m.patch, 16, 1, 4, 1 << 20, 4);
  ASSERT_FALSE(wrapped.ok());
  EXPECT_NE(wrapped.message().find("more than 2^63"), std::string::npos) << wrapped.message();
}

// Chunk sizes above the longest episode give its layout again: they are not built (a config
// with chunk_max 4096 and short episodes plans as fast as chunk_max = the episode length).
TEST(MemoryPlan, ChunksAboveTheLongestEpisodeAreNotPlannedAgain) {
  PlanModel m;
  PlanRow a, b;
  a.batch = b.batch = 2, a.padded_frames = b.padded_frames = 6;
  a.height = b.height = a.width = b.width = 4;
  a.action_steps = b.action_steps = 2, a.text_len = b.text_len = 3;
  ASSERT_TRUE(PlanRowAttention(&a, {6, 6}, m.patch, 16, 1, 6, 8, m.heads).ok());
  ASSERT_TRUE(PlanRowAttention(&b, {6, 6}, m.patch, 16, 1, 4096, 8, m.heads).ok());
  EXPECT_EQ(a.chunk, b.chunk);
  EXPECT_EQ(a.computed_pairs, b.computed_pairs);
  EXPECT_EQ(a.key_slots, b.key_slots);
  EXPECT_EQ(a.call_pairs, b.call_pairs);
}

// Every count is summed in checked arithmetic: sizes each in range whose products exceed int64
// report an overflow instead of a wrapped (negative, so "fitting") total.
TEST(MemoryPlan, ByteCountsThatLeaveInt64AreAnOverflowNotANegativeTotal) {
  PlanModel m;
  m.dim = 1 << 16, m.heads = 1024, m.layers = 1024, m.ffn_dim = 1 << 20;
  PlanRow r;
  r.batch = 64, r.padded_frames = 1 << 20, r.height = r.width = 1 << 10;
  r.action_steps = 1 << 10, r.text_len = 1 << 20;
  r.tokens = int64_t(1) << 40, r.valid_tokens = r.tokens, r.key_slots = int64_t(1) << 45;
  r.computed_pairs = int64_t(1) << 55;
  PlanSettings s;
  const MemoryPlan p = MakeMemoryPlan(m, r, s);
  EXPECT_TRUE(p.overflow);
  EXPECT_TRUE(p.activations.overflow);
  // The model alone is in range: its counts are exact.
  EXPECT_GT(p.parameters, 0);
  EXPECT_EQ(p.weights, p.parameters * 4);
  // A plan in range does not overflow.
  EXPECT_FALSE(MakeMemoryPlan(Real5B(), Row(Real5B(), 4, 40), s).overflow);
}

}  // namespace
}  // namespace baton
