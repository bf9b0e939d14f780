// Attention over a packed row: the block-sparse self-attention of the production path, the dense
// reference, the per-sample text cross-attention, and the per-micro-step tensors they need
// (LayoutTensors).
//
// LayoutTensors turns a PackedLayout into device tensors once per micro-step: RoPE cos/sin per
// token, and the attention plan (attention_plan.h) as index tensors — per bucket of query groups
// the query/key gather indices and the exact rule as an additive bias — batched across all
// samples of the row, so the number of attention ops per layer does not grow with the samples
// packed into it. Every layer and the backward reuse them (they are inputs of the graph, never
// module state, so a forward of another shape between a forward and its backward cannot replace
// them, as it would replace a mask kept on the module that the backward re-reads).
// Rows that may attend to nothing (padded frames) produce zeros, never NaN, forward and backward.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "trainer/model/attention_plan.h"
#include "trainer/model/packed_layout.h"

namespace baton {

// One batched self-attention call: a bucket of the plan as device tensors.
struct AttentionCall {
  int64_t groups = 0, lq = 0, lk = 0;
  torch::Tensor queries;  // [groups * lq] int64 token indices
  torch::Tensor keys;     // [groups * lk] int64, empty slots point at the zero row T
  torch::Tensor bias;     // [groups, 1, lq, lk] the exact rule as a 0 / -inf score bias
};

struct LayoutTensors {
  int64_t tokens = 0;
  torch::Tensor rope_cos, rope_sin;  // [T, 1, head_dim]: (cos, cos), (-sin, sin) per pair
  std::vector<AttentionCall> calls;  // self-attention, one per bucket of the plan
  torch::Tensor query_positions;     // concat of the calls' queries (for the scatter)
  // Cross-attention: every token of the row (padded frames included) ordered sample-major, its
  // inverse permutation, and 1 / 0 for tokens of valid / padded frames, [T, 1, 1].
  int64_t samples = 0;
  torch::Tensor sample_order, sample_order_inverse, token_valid;
  int64_t computed_pairs = 0, allowed_pairs = 0;  // score entries computed / allowed by the rule
};

LayoutTensors MakeLayoutTensors(const PackedLayout& layout, int64_t head_dim, double rope_theta,
                                torch::Device device, torch::Dtype dtype,
                                int64_t call_cost_pairs = kAttentionCallCostPairs);

// Rotates pairs (x[2i], x[2i+1]) of q or k [T, H, hd] by the token's 3-axis RoPE angles.
torch::Tensor ApplyRope(const torch::Tensor& x, const LayoutTensors& lt);

// q, k, v: [T, H, hd] -> [T, H, hd]. Work follows the allowed pairs (block-sparse by sample,
// chunk and window), one batched call per bucket of the plan.
// recompute_entries > 0 (train.activation_checkpointing: blocks+attention): each bucket runs as
// calls of at most that many score entries over all heads (GroupsPerCall), and with grad mode on
// each call goes through Recompute (recompute.h), so the forward keeps only the head-major q, k, v
// the calls share and the backward recomputes one call's scores at a time. 0: as above, with the
// scores of every call kept for the backward.
torch::Tensor BlockSparseAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const LayoutTensors& lt,
                                   int64_t recompute_entries = 0);

// The test oracle: a dense T x T mask from the rule over every token pair. O(T^2).
torch::Tensor DenseMaskedAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const PackedLayout& layout);

// The oracle's mask, [T, T] bool on the CPU: row i holds the keys query i may attend to.
torch::Tensor DenseAttentionMask(const PackedLayout& layout);

// DenseMaskedAttention with its mask built once (DenseAttentionMask, moved to q's device), so
// a benchmark times the attention and not the O(T^2) host loop that builds the mask.
torch::Tensor DenseMaskedAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const torch::Tensor& mask);

// Each token attends to its own sample's text only; tokens of padded frames get zeros.
// q [T, H, hd]; k, v [B, L, H, hd] -> [T, H, hd]. One batched call for all samples.
torch::Tensor TextCrossAttention(const torch::Tensor& q, const torch::Tensor& k,
                                 const torch::Tensor& v, const LayoutTensors& lt);

// Allowed score entries of a layout (for the computed/allowed ratio), counted from the rule.
int64_t AllowedPairs(const LayoutTensors& lt);

}  // namespace baton
