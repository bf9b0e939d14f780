#include "trainer/memory/memory_plan.h"

#include <algorithm>
#include <utility>

#include "trainer/distributed/shard_plan.h"
#include "trainer/memory/activation_widths.h"
#include "trainer/memory/checked_int.h"
#include "trainer/model/attention_plan.h"

namespace baton {

namespace {

using memory_plan_detail::ActivationWidths;
using memory_plan_detail::Checked;
using memory_plan_detail::Max;
using memory_plan_detail::Store;
using memory_plan_detail::WidthsFor;

// An upper bound of the index entries held at once while one chunk setting of a row of `batch`
// episodes of `frames` latent frames is planned: BuildPackedLayout's seven per-token arrays, and
// per query group its lq query slots and lk key slots three times over (the key lists, their
// padded copy, PlanAttention's bucket copy) and the queries twice (the layout's and the bucket's).
Checked LayoutEntriesBound(const PlanRow& row, int64_t frames, int64_t hp, int64_t wp,
                           int64_t chunk, int64_t window) {
  const Checked per_frame = Checked(hp) * wp + row.action_steps;  // P + N
  const Checked tokens = Checked(2) * row.batch * row.padded_frames * per_frame;
  const int64_t back = (window + 1) / 2;
  // A query chunk sees the clean frames of at most back + 1 chunks and its own noisy frames, and
  // never more than both copies of every frame of the episode.
  Checked key_frames = (Checked(std::min(back, frames)) + 2) * chunk;
  if (key_frames.bad || key_frames.v > 2 * frames) key_frames = Checked(2) * frames;
  const Checked lk = key_frames * per_frame;
  const Checked lq = Checked(2) * per_frame;
  return Checked(7) * tokens + Checked(row.batch) * frames * (Checked(2) * lq + Checked(3) * lk);
}

}  // namespace

std::vector<PlanParameter> ModelParameters(const PlanModel& m) {
  const int64_t D = m.dim, pp = m.channels * m.patch * m.patch;
  std::vector<PlanParameter> out;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, bool trainable = true) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    out.push_back({name, numel, trainable, std::move(shape)});
  };
  auto linear = [&](const std::string& name, int64_t in, int64_t o, bool trainable = true) {
    add(name + ".weight", {o, in}, trainable);
    add(name + ".bias", {o}, trainable);
  };
  auto condition = [&](const std::string& prefix, bool frozen_text) {
    linear(prefix + ".time_embedder.linear_1", m.freq_dim, D);
    linear(prefix + ".time_embedder.linear_2", D, D);
    linear(prefix + ".time_proj", D, 6 * D);
    linear(prefix + ".text_embedder.linear_1", m.text_dim, D, !frozen_text);
    linear(prefix + ".text_embedder.linear_2", D, D, !frozen_text);
  };
  auto attention = [&](const std::string& prefix) {
    for (const char* p : {".to_q", ".to_k", ".to_v", ".to_out.0"}) linear(prefix + p, D, D);
    add(prefix + ".norm_q.weight", {D});
    add(prefix + ".norm_k.weight", {D});
  };
  // A module's own parameters come before its children's (libtorch's named_parameters order).
  add("scale_shift_table", {1, 2, D});
  linear("patch_embedding_mlp", pp, D);
  linear("action_embedder", m.action_dim, D);
  condition("condition_embedder", false);
  condition("condition_embedder_action", true);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string b = "blocks." + std::to_string(i);
    add(b + ".scale_shift_table", {1, 6, D});
    attention(b + ".attn1");
    attention(b + ".attn2");
    add(b + ".norm2.weight", {D});
    add(b + ".norm2.bias", {D});
    linear(b + ".ffn.net.0.proj", D, m.ffn_dim);
    linear(b + ".ffn.net.2", m.ffn_dim, D);
  }
  linear("proj_out", D, pp);
  linear("action_proj_out", D, m.action_dim);
  return out;
}

Status PlanRowAttention(PlanRow* row, const std::vector<int64_t>& frames, int64_t patch,
                        int64_t head_dim, int64_t chunk_min, int64_t chunk_max, int64_t window_max,
                        int64_t heads) {
  const int64_t hp = row->height / patch, wp = row->width / patch;
  int64_t longest = 0;
  for (int64_t f : frames) longest = std::max(longest, std::min(f, row->padded_frames));
  const int64_t lo = std::max<int64_t>(1, chunk_min);
  // A chunk of the longest episode's length or more puts every frame in chunk 0: the same
  // layout, so the same figures (a later tie never replaces the first best).
  const int64_t hi =
      std::max(lo, std::min(std::max(chunk_min, chunk_max), std::max<int64_t>(1, longest)));
  Checked work = 0;
  Checked largest = 0;
  for (int64_t chunk = lo; chunk <= hi; ++chunk) {
    const Checked bound = LayoutEntriesBound(*row, longest, hp, wp, chunk, window_max);
    work += bound;
    largest = Max({largest, bound});
  }
  if (work.bad || largest.v > kMaxPlanLayoutEntries || work.v > kMaxPlanWorkEntries) {
    return Status::InvalidArgument(
        "the longest row (" + std::to_string(row->batch) + " episode(s) x " +
        std::to_string(row->padded_frames) + " latent frames of " + std::to_string(row->height) +
        "x" + std::to_string(row->width) + " pixels and " + std::to_string(row->action_steps) +
        " action steps, attention chunks " + std::to_string(lo) + ".." + std::to_string(hi) +
        ", window " + std::to_string(window_max) + ") is too large to plan: " +
        (work.bad ? std::string("more than 2^63 layout index entries")
                  : std::to_string(largest.v) + " layout index entries at once (limit " +
                        std::to_string(kMaxPlanLayoutEntries) + "), " + std::to_string(work.v) +
                        " over all chunks (limit " + std::to_string(kMaxPlanWorkEntries) + ")") +
        "; no device holds the attention keys of such a row");
  }
  int64_t best = -1;
  row->call_pairs = row->call_slots = 0;
  for (int64_t chunk = lo; chunk <= hi; ++chunk) {
    std::vector<SampleSpec> specs;
    for (int64_t f : frames) specs.push_back({std::min(f, row->padded_frames), chunk, window_max});
    const PackedLayout layout =
        BuildPackedLayout(row->padded_frames, hp, wp, row->action_steps, specs);
    const AttentionPlan plan = PlanAttention(layout);
    int64_t slots = 0;
    for (const auto& b : plan.buckets) slots += b.groups * b.lk;
    const int64_t pairs = plan.computed_pairs();
    for (const auto& b : plan.buckets) {
      const int64_t n = std::min(b.groups, GroupsPerCall(heads, b.lq, b.lk, kRecomputeCallEntries));
      if (n * b.lq * b.lk > row->call_pairs) {
        row->call_pairs = n * b.lq * b.lk;
        row->call_slots = n * (b.lq + 2 * b.lk);
      }
    }
    // Per head: the score entries plus the gathered keys and values (2 x slots x head_dim).
    const int64_t cost = pairs + 2 * slots * head_dim;
    if (cost > best) {
      best = cost;
      row->tokens = layout.tokens;
      row->valid_tokens = layout.valid_tokens();
      row->key_slots = slots;
      row->computed_pairs = pairs;
      row->chunk = chunk;
      row->window = window_max;
    }
  }
  return Status::Ok();
}

namespace {

// Every count in checked arithmetic: the sizes are each in range, their products need not be.
struct ActivationCounts {
  Checked per_block, outside_blocks, block_inputs, inputs, working, per_block_attention,
      attention_call, working_attention, none, blocks, blocks_attention;
};

// What one block keeps, with and without its self-attention recomputed.
void CountBlock(const PlanModel& m, const PlanRow& r, const ActivationWidths& z,
                ActivationCounts& out) {
  const int64_t a = z.a, w = z.w, rms = z.rms, probs = z.probs;
  const Checked T = r.tokens, D = m.dim, H = m.heads, Fd = m.ffn_dim, L = r.text_len;
  const Checked B = r.batch;
  // One block (video_action_model.cc, BlockImpl::forward), tensor by tensor:
  //  wide [T, D]: the modulation sum e (6), the three LayerNorm inputs, LayerNorm outputs norm1
  //  and norm3, (1 + e1), (1 + e4), the FFN output the gate multiplies (14 in all);
  //  activation [T, D]: h, to_out inputs (2), the gated attention output, c, the cross-attention
  //  queries gathered by sample, f (7); three QK-RMSNorms.
  out.per_block = T * D * (14 * w + 7 * a + 3 * rms);
  // Block-sparse self-attention: gathered queries, keys, values and the probabilities.
  const Checked self_attention =
      r.valid_tokens * D * a + 2 * r.key_slots * D * a + H * r.computed_pairs * probs;
  out.per_block += self_attention;
  // Text cross-attention: probabilities over every token's L text tokens; its keys and values.
  out.per_block += T * H * L * probs + B * L * D * (rms + 3 * a);
  // FFN: the hidden activation before and after the GELU.
  out.per_block += 2 * T * Fd * a;
  // LayerNorm means / inverse deviations and RMSNorm factors ([T, 1] each).
  out.per_block += 9 * T * w;

  // blocks+attention: the recomputed block keeps, of its self-attention, only the head-major
  // q, k, v its calls share ([H, T (+1), hd] each) instead of the gathered copies and the scores.
  // The call being recomputed holds its scores, the gradients of its probabilities and scores,
  // its gathered queries, keys and values, and the three [H, T, hd] gradients it hands on. The
  // cross-attention's and the FFN's backward transients come and go before or after the calls
  // (never at once with them): the larger of the two sets counts, plus the [T, D] gradients.
  out.per_block_attention = out.per_block - self_attention + 3 * T * D * a;
  out.attention_call = H * r.call_pairs * (probs + 2 * w) + r.call_slots * D * a + 3 * T * D * a;
  out.working_attention =
      Max({out.attention_call, Checked(2) * Max({T * H * L, T * Fd}) * w}) + 4 * T * D * w;
}

// What lives outside the blocks: embeddings, the head, the row's inputs and the backward's
// transients.
void CountOutsideBlocks(const PlanModel& m, const PlanRow& r, const PlanSettings& s,
                        const ActivationWidths& z, ActivationCounts& out) {
  const int64_t a = z.a, w = z.w, master = z.master;
  const bool bf16 = z.bf16;
  const Checked T = r.tokens, D = m.dim, H = m.heads, Fd = m.ffn_dim, L = r.text_len;
  const Checked B = r.batch, hd = m.dim / std::max<int64_t>(1, m.heads);
  // Outside the blocks: the time projection e0 [T, 6, D] every block reads, the time MLPs
  // (input, hidden, SiLU, output, the SiLU before the projection, the joined embedding), and
  // the output head (its [T, 2, D] modulation, LayerNorm input and output, (1 + scale), h).
  out.outside_blocks = T * D * (12 * a + 5 * w) + T * m.freq_dim * a;
  out.block_inputs = T * D * a;  // a recomputed block keeps only its input x (e0 is shared)

  // The row: latents and actions (noisy, clean, noise, target, mask...) and the text, in the
  // input dtype, for the micro-step in flight and the rows the loader reads ahead; the layout
  // tensors every layer shares (the attention bias, RoPE tables, gather indices).
  const int64_t in = bf16 ? 4 : master;
  const Checked video = B * m.channels * r.padded_frames * r.height * r.width;
  const Checked action = B * m.action_dim * r.padded_frames * r.action_steps;
  const Checked text = B * L * m.text_dim;
  const int64_t rows = std::max<int64_t>(0, s.prefetch) + 1;
  out.inputs = rows * (video + 2 * action + text) * in + 6 * (video + action) * in + 2 * text * in +
               r.computed_pairs * w + 2 * T * hd * w + 8 * (r.valid_tokens + r.key_slots + 3 * T);

  // The backward's largest transient set: a gradient and its softmax / GELU input-gradient of
  // the largest score or FFN tensor, plus a few [T, D] gradients flowing through the block.
  const Checked largest = Max({H * r.computed_pairs, T * H * L, T * Fd}) * w;
  out.working = 2 * largest + 4 * T * D * w;
}

}  // namespace

ActivationBytes PlanActivations(const PlanModel& m, const PlanRow& r, const PlanSettings& s) {
  const ActivationWidths z = WidthsFor(s);
  ActivationCounts out;
  CountBlock(m, r, z, out);
  CountOutsideBlocks(m, r, s, z, out);
  out.none = out.outside_blocks + m.layers * out.per_block + out.inputs + out.working;
  out.blocks =
      out.outside_blocks + m.layers * out.block_inputs + out.per_block + out.inputs + out.working;
  out.blocks_attention = out.outside_blocks + m.layers * out.block_inputs +
                         out.per_block_attention + out.inputs + out.working_attention;
  ActivationBytes bytes;
  bool* o = &bytes.overflow;
  bytes.per_block = Store(out.per_block, o);
  bytes.outside_blocks = Store(out.outside_blocks, o);
  bytes.block_inputs = Store(out.block_inputs, o);
  bytes.inputs = Store(out.inputs, o);
  bytes.working = Store(out.working, o);
  bytes.per_block_attention = Store(out.per_block_attention, o);
  bytes.attention_call = Store(out.attention_call, o);
  bytes.working_attention = Store(out.working_attention, o);
  bytes.none = Store(out.none, o);
  bytes.blocks = Store(out.blocks, o);
  bytes.blocks_attention = Store(out.blocks_attention, o);
  return bytes;
}

bool HoldsBf16Copy(const PlanParameter& p) {
  if (!p.trainable) return false;
  const std::string& n = p.name;
  auto starts = [&](const std::string& head) { return n.rfind(head, 0) == 0; };
  auto ends = [&](const std::string& tail) {
    return n.size() >= tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0;
  };
  // Norm weights and scale-shift tables: applied in float32, no copy.
  if (ends("scale_shift_table") || n.find("norm") != std::string::npos) return false;
  // The input projections run twice per forward (noisy and clean tokens), each call casting its
  // weight anew: their float32 gradients are summed in float32, which one copy would not do.
  if (starts("patch_embedding_mlp.") || starts("action_embedder.")) return false;
  // Linears on 3-D inputs (the text projection, cross-attention's keys and values over the
  // text) add their float32 bias after the matmul.
  if (ends(".bias") && (n.find("text_embedder.") != std::string::npos || ends("attn2.to_k.bias") ||
                        ends("attn2.to_v.bias"))) {
    return false;
  }
  return ends(".weight") || ends(".bias");
}

namespace {

// Under a sharded master with bf16 compute, the weights and gradients the plan holds instead.
void PlanShardedMaster(const PlanModel& m, const ShardPlan& shard, MemoryPlan& p) {
  bool* o = &p.overflow;
  // bf16 compute copies replace the replicated fp32 master and autocast's cache of casts; the
  // owner keeps the fp32 master of its share (bounded by the largest share of all parameters).
  Checked copied = 0;
  int64_t largest = 0, second = 0;  // the two largest copies
  for (const auto& q : ModelParameters(m)) {
    if (!HoldsBf16Copy(q)) continue;
    copied += q.numel;
    if (q.numel > largest) {
      second = std::exchange(largest, q.numel);
    } else if (q.numel > second) {
      second = q.numel;
    }
  }
  // A copy's bf16 gradient lives until the next copy's arrives and is added into the float32
  // buffer: at most two at once.
  p.gradients = Store(Checked(p.gradients) + (Checked(largest) + second) * 2, o);
  p.bf16_copied = Store(copied, o);
  p.weights = Store(copied * 2 + (Checked(p.parameters) - copied) * p.master_bytes, o);
  p.master_share = Store(Checked(shard.padded) * p.master_bytes, o);
  p.autocast_copies = 0;
}

// The host snapshot an asynchronous checkpoint takes of what this rank owns.
int64_t CheckpointSnapshotBytes(const PlanSettings& s, const ShardPlan& shard, int64_t world,
                                int64_t tensors, MemoryPlan& p) {
  bool* o = &p.overflow;
  const int64_t owned = world > 1 ? shard.padded : p.trainable;  // a save writes what it owns
  const Checked frozen = Checked(p.parameters) - p.trainable;
  const int64_t export_bytes = s.export_dtype == ExportDType::kBf16 ? 2 : 4;
  const int64_t weight_bytes = export_bytes + (export_bytes != p.master_bytes ? p.master_bytes : 0);
  return Store(Checked(2) * owned * p.master_bytes + Checked(8) * tensors +
                   (Checked(owned) + frozen) * weight_bytes,
               o);
}

// The totals under each activation-checkpointing mode, and the one the settings pick.
void PlanTotals(const PlanSettings& s, Checked fixed, MemoryPlan& p) {
  bool* o = &p.overflow;
  // The live bytes are below 2^63, so the product is below 2^63 * (heap_factor - 1); a factor
  // above 2 could still leave int64.
  auto overhead = [&](int64_t live) -> int64_t {
    const double x = double(live) * (s.heap_factor - 1.0);
    if (!(x < 9.2e18)) {
      p.overflow = true;
      return 0;
    }
    return int64_t(x);
  };
  p.heap_overhead_none = overhead(p.activations.none);
  p.heap_overhead_blocks = overhead(p.activations.blocks);
  p.heap_overhead_blocks_attention = overhead(p.activations.blocks_attention);
  p.total_none = Store(fixed + p.activations.none + p.heap_overhead_none, o);
  p.total_blocks = Store(fixed + p.activations.blocks + p.heap_overhead_blocks, o);
  p.total_blocks_attention =
      Store(fixed + p.activations.blocks_attention + p.heap_overhead_blocks_attention, o);
  if (s.checkpointing == ActivationCheckpointing::kBlocksAttention) {
    p.activations_used = p.activations.blocks_attention;
    p.heap_overhead = p.heap_overhead_blocks_attention;
    p.total = p.total_blocks_attention;
  } else if (s.checkpointing == ActivationCheckpointing::kBlocks) {
    p.activations_used = p.activations.blocks;
    p.heap_overhead = p.heap_overhead_blocks;
    p.total = p.total_blocks;
  } else {
    p.activations_used = p.activations.none;
    p.heap_overhead = p.heap_overhead_none;
    p.total = p.total_none;
  }
}

}  // namespace

MemoryPlan MakeMemoryPlan(const PlanModel& m, const PlanRow& row, const PlanSettings& s) {
  MemoryPlan p;
  bool* o = &p.overflow;
  p.master_bytes = s.dtype == DType::kFloat64 ? 8 : 4;
  std::vector<int64_t> trainable;
  Checked parameters = 0, trainable_total = 0;
  for (const auto& q : ModelParameters(m)) {
    parameters += q.numel;
    if (q.trainable) {
      trainable_total += q.numel;
      trainable.push_back(q.numel);
    }
  }
  p.parameters = Store(parameters, o);
  p.trainable = Store(trainable_total, o);
  p.weights = Store(parameters * p.master_bytes, o);
  p.gradients = Store(trainable_total * p.master_bytes, o);
  const int64_t world = std::max<int64_t>(1, s.world);
  const ShardPlan shard = MakeShardPlan(trainable, world);
  p.optimizer_share = s.shard == ShardMode::kNone ? p.trainable : shard.padded;
  p.optimizer = Store(Checked(2) * p.optimizer_share * p.master_bytes, o);
  p.gradients_held = s.shard == ShardMode::kGradients
                         ? Store(Checked(shard.padded) * p.master_bytes, o)
                         : p.gradients;
  // A flattened bucket (no larger than the gradients) and its received copy; a one-rank run
  // reduces nothing.
  p.collective_buffers = world > 1 ? 2 * std::min<int64_t>(s.bucket_bytes, p.gradients) : 0;
  p.autocast_copies = s.dtype == DType::kBFloat16 ? Store(Checked(2) * p.trainable, o) : 0;
  if (s.master == OptimMaster::kSharded && s.dtype == DType::kBFloat16) {
    PlanShardedMaster(m, shard, p);
  }
  p.activations = PlanActivations(m, row, s);
  if (p.activations.overflow) p.overflow = true;
  p.runtime = s.runtime_bytes;
  if (s.async_checkpoint) {
    p.checkpoint_snapshot = CheckpointSnapshotBytes(s, shard, world, int64_t(trainable.size()), p);
  }
  const Checked fixed = Checked(p.weights) + p.master_share + p.gradients + p.optimizer +
                        p.collective_buffers + p.autocast_copies + p.runtime +
                        (s.cuda ? 0 : p.checkpoint_snapshot);
  PlanTotals(s, fixed, p);
  return p;
}

}  // namespace baton
