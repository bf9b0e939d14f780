#include "trainer/memory/memory_plan.h"

#include <algorithm>

#include "trainer/dist/shard_plan.h"
#include "trainer/model/attention_plan.h"

namespace baton {

std::vector<PlanParameter> ModelParameters(const PlanModel& m) {
  const int64_t D = m.dim, pp = m.channels * m.patch * m.patch;
  std::vector<PlanParameter> out;
  auto add = [&](const std::string& name, int64_t numel, bool trainable = true) {
    out.push_back({name, numel, trainable});
  };
  auto linear = [&](const std::string& name, int64_t in, int64_t o, bool trainable = true) {
    add(name + ".weight", in * o, trainable);
    add(name + ".bias", o, trainable);
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
    add(prefix + ".norm_q.weight", D);
    add(prefix + ".norm_k.weight", D);
  };
  // A module's own parameters come before its children's (libtorch's named_parameters order).
  add("scale_shift_table", 2 * D);
  linear("patch_embedding_mlp", pp, D);
  linear("action_embedder", m.action_dim, D);
  condition("condition_embedder", false);
  condition("condition_embedder_action", true);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string b = "blocks." + std::to_string(i);
    add(b + ".scale_shift_table", 6 * D);
    attention(b + ".attn1");
    attention(b + ".attn2");
    add(b + ".norm2.weight", D);
    add(b + ".norm2.bias", D);
    linear(b + ".ffn.net.0.proj", D, m.ffn_dim);
    linear(b + ".ffn.net.2", m.ffn_dim, D);
  }
  linear("proj_out", D, pp);
  linear("action_proj_out", D, m.action_dim);
  return out;
}

void PlanRowAttention(PlanRow* row, const std::vector<int64_t>& frames, int64_t patch,
                      int64_t head_dim, int64_t chunk_min, int64_t chunk_max, int64_t window_max,
                      int64_t heads) {
  const int64_t hp = row->height / patch, wp = row->width / patch;
  int64_t best = -1;
  row->call_pairs = row->call_slots = 0;
  for (int64_t chunk = std::max<int64_t>(1, chunk_min); chunk <= std::max(chunk_min, chunk_max);
       ++chunk) {
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
}

ActivationBytes PlanActivations(const PlanModel& m, const PlanRow& r, const PlanSettings& s) {
  const bool bf16 = s.dtype == "bfloat16";
  const int64_t master = s.dtype == "float64" ? 8 : 4;
  // a: the activation dtype (bf16 under autocast); w: the "wide" dtype norms, modulation and
  // residual adds run in (float32 under bf16, as upstream does).
  const int64_t a = bf16 ? 2 : master, w = master;
  const int64_t T = r.tokens, D = m.dim, H = m.heads, Fd = m.ffn_dim, L = r.text_len;
  const int64_t B = r.batch, hd = m.dim / std::max<int64_t>(1, m.heads);
  // QK-RMSNorm keeps its input and its normalised product; softmax keeps its output. CUDA's
  // autocast runs pow and softmax in float32: RMSNorm also keeps pow's float32 copy and its
  // product is float32, and the matmul after the softmax keeps a bf16 copy of its float32
  // output. CPU autocast runs both in bf16.
  const bool fp32_ops = bf16 && s.cuda;
  const int64_t rms = !bf16 ? 2 * master : fp32_ops ? a + 2 * w : 2 * a;
  const int64_t probs = !bf16 ? master : fp32_ops ? w + a : a;

  ActivationBytes out;
  // One block (video_action_model.cc, BlockImpl::forward), tensor by tensor:
  //  wide [T, D]: the modulation sum e (6), the three LayerNorm inputs, LayerNorm outputs norm1
  //  and norm3, (1 + e1), (1 + e4), the FFN output the gate multiplies (14 in all);
  //  activation [T, D]: h, to_out inputs (2), the gated attention output, c, the cross-attention
  //  queries gathered by sample, f (7); three QK-RMSNorms.
  out.per_block = T * D * (14 * w + 7 * a + 3 * rms);
  // Block-sparse self-attention: gathered queries, keys, values and the probabilities.
  const int64_t self_attention =
      r.valid_tokens * D * a + 2 * r.key_slots * D * a + H * r.computed_pairs * probs;
  out.per_block += self_attention;
  // Text cross-attention: probabilities over every token's L text tokens; its keys and values.
  out.per_block += T * H * L * probs + B * L * D * (rms + 3 * a);
  // FFN: the hidden activation before and after the GELU.
  out.per_block += 2 * T * Fd * a;
  // LayerNorm means / inverse deviations and RMSNorm factors ([T, 1] each).
  out.per_block += 9 * T * w;

  // Outside the blocks: the time projection e0 [T, 6, D] every block reads, the time MLPs
  // (input, hidden, SiLU, output, the SiLU before the projection, the joined embedding), and
  // the output head (its [T, 2, D] modulation, LayerNorm input and output, (1 + scale), h).
  out.outside_blocks = T * D * (12 * a + 5 * w) + T * m.freq_dim * a;
  out.block_inputs = T * D * a;  // a recomputed block keeps only its input x (e0 is shared)

  // The row: latents and actions (noisy, clean, noise, target, mask...) and the text, in the
  // input dtype, for the micro-step in flight and the rows the loader reads ahead; the layout
  // tensors every layer shares (the attention bias, RoPE tables, gather indices).
  const int64_t in = bf16 ? 4 : master;
  const int64_t video = B * m.channels * r.padded_frames * r.height * r.width;
  const int64_t action = B * m.action_dim * r.padded_frames * r.action_steps;
  const int64_t text = B * L * m.text_dim;
  const int64_t rows = std::max<int64_t>(0, s.prefetch) + 1;
  out.inputs = rows * (video + 2 * action + text) * in + 6 * (video + action) * in + 2 * text * in +
               r.computed_pairs * w + 2 * T * hd * w + 8 * (r.valid_tokens + r.key_slots + 3 * T);

  // The backward's largest transient set: a gradient and its softmax / GELU input-gradient of
  // the largest score or FFN tensor, plus a few [T, D] gradients flowing through the block.
  const int64_t largest = std::max({H * r.computed_pairs, T * H * L, T * Fd}) * w;
  out.working = 2 * largest + 4 * T * D * w;

  // blocks+attention: the recomputed block keeps, of its self-attention, only the head-major
  // q, k, v its calls share ([H, T (+1), hd] each) instead of the gathered copies and the scores.
  // The call being recomputed holds its scores, the gradients of its probabilities and scores,
  // its gathered queries, keys and values, and the three [H, T, hd] gradients it hands on. The
  // cross-attention's and the FFN's backward transients come and go before or after the calls
  // (never at once with them): the larger of the two sets counts, plus the [T, D] gradients.
  out.per_block_attention = out.per_block - self_attention + 3 * T * D * a;
  out.attention_call = H * r.call_pairs * (probs + 2 * w) + r.call_slots * D * a + 3 * T * D * a;
  out.working_attention =
      std::max(out.attention_call, 2 * std::max(T * H * L, T * Fd) * w) + 4 * T * D * w;

  out.none = out.outside_blocks + m.layers * out.per_block + out.inputs + out.working;
  out.blocks =
      out.outside_blocks + m.layers * out.block_inputs + out.per_block + out.inputs + out.working;
  out.blocks_attention = out.outside_blocks + m.layers * out.block_inputs +
                         out.per_block_attention + out.inputs + out.working_attention;
  return out;
}

MemoryPlan MakeMemoryPlan(const PlanModel& m, const PlanRow& row, const PlanSettings& s) {
  MemoryPlan p;
  p.master_bytes = s.dtype == "float64" ? 8 : 4;
  std::vector<int64_t> trainable;
  for (const auto& q : ModelParameters(m)) {
    p.parameters += q.numel;
    if (q.trainable) {
      p.trainable += q.numel;
      trainable.push_back(q.numel);
    }
  }
  p.weights = p.parameters * p.master_bytes;
  p.gradients = p.trainable * p.master_bytes;
  const int64_t world = std::max<int64_t>(1, s.world);
  const ShardPlan shard = MakeShardPlan(trainable, world);
  p.optimizer_share = s.shard == "none" ? p.trainable : shard.padded;
  p.optimizer = 2 * p.optimizer_share * p.master_bytes;
  p.gradients_held = s.shard == "gradients" ? shard.padded * p.master_bytes : p.gradients;
  // A flattened bucket (no larger than the gradients) and its received copy; a one-rank run
  // reduces nothing.
  p.collective_buffers = world > 1 ? 2 * std::min<int64_t>(s.bucket_bytes, p.gradients) : 0;
  p.autocast_copies = s.dtype == "bfloat16" ? 2 * p.trainable : 0;
  p.activations = PlanActivations(m, row, s);
  p.runtime = s.runtime_bytes;
  const int64_t fixed =
      p.weights + p.gradients + p.optimizer + p.collective_buffers + p.autocast_copies + p.runtime;
  auto overhead = [&](int64_t live) { return int64_t(double(live) * (s.heap_factor - 1.0)); };
  p.heap_overhead_none = overhead(p.activations.none);
  p.heap_overhead_blocks = overhead(p.activations.blocks);
  p.heap_overhead_blocks_attention = overhead(p.activations.blocks_attention);
  p.total_none = fixed + p.activations.none + p.heap_overhead_none;
  p.total_blocks = fixed + p.activations.blocks + p.heap_overhead_blocks;
  p.total_blocks_attention =
      fixed + p.activations.blocks_attention + p.heap_overhead_blocks_attention;
  if (s.checkpointing == "blocks+attention") {
    p.activations_used = p.activations.blocks_attention;
    p.heap_overhead = p.heap_overhead_blocks_attention;
    p.total = p.total_blocks_attention;
  } else if (s.checkpointing == "blocks") {
    p.activations_used = p.activations.blocks;
    p.heap_overhead = p.heap_overhead_blocks;
    p.total = p.total_blocks;
  } else {
    p.activations_used = p.activations.none;
    p.heap_overhead = p.heap_overhead_none;
    p.total = p.total_none;
  }
  return p;
}

}  // namespace baton
