// Masked self-attention over a packed row: the block-sparse production path and the dense
// reference, plus the per-micro-step tensors both need (LayoutTensors).
//
// LayoutTensors turns a PackedLayout into device tensors once per micro-step: RoPE cos/sin per
// token, and per sample the query/key gather indices and the exact boolean mask of each query
// group. Every layer reuses them (they are inputs of the graph, never module state, so a forward
// of another shape between a forward and its backward cannot replace them, as it would replace a
// mask kept on the module that the backward re-reads).
// Rows that may attend to nothing (padded frames) produce zeros, never NaN, forward and backward.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "trainer/model/packed_layout.h"

namespace baton {

struct AttentionGroups {
  int64_t groups = 0, lq = 0, lk = 0;
  torch::Tensor queries;  // [groups * lq] int64 token indices
  torch::Tensor keys;     // [groups * lk] int64, empty slots point at the zero row T
  torch::Tensor mask;     // [groups, 1, lq, lk] bool, the exact rule
  torch::Tensor bias;     // same, as an additive 0 / -inf score bias in the compute dtype
};

struct LayoutTensors {
  int64_t tokens = 0;
  torch::Tensor rope_cos, rope_sin;            // [T, 1, head_dim / 2]
  std::vector<AttentionGroups> samples;        // self-attention plan, one per sample
  std::vector<torch::Tensor> sample_tokens;    // valid token indices of each sample (cross-attn)
  torch::Tensor valid_query_positions;         // concat of all groups' queries (for the scatter)
};

LayoutTensors MakeLayoutTensors(const PackedLayout& layout, int64_t head_dim, double rope_theta,
                                torch::Device device, torch::Dtype dtype);

// Rotates pairs (x[2i], x[2i+1]) of q or k [T, H, hd] by the token's 3-axis RoPE angles.
torch::Tensor ApplyRope(const torch::Tensor& x, const LayoutTensors& lt);

// q, k, v: [T, H, hd] -> [T, H, hd]. Work follows the allowed pairs (block-sparse by sample,
// chunk and window).
torch::Tensor BlockSparseAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const LayoutTensors& lt);

// The test oracle: a dense T x T mask from the rule over every token pair. O(T^2).
torch::Tensor DenseMaskedAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const PackedLayout& layout);

// Allowed score entries of a layout (for the computed/allowed ratio), counted from the masks.
int64_t AllowedPairs(const LayoutTensors& lt);

}  // namespace baton
