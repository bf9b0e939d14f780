#include "trainer/model/attention.h"

#include <array>
#include <cmath>
#include <limits>

#include <ATen/Parallel.h>

#include "trainer/model/recompute.h"

namespace baton {
namespace {

// Masked softmax(q k^T / sqrt(d)) v for [..., Lq, d] x [..., Lk, d] with mask [..., Lq, Lk].
// Rows with no allowed key give zeros: their scores are neutralised before the softmax and the
// probabilities are multiplied by the mask, so no -inf - -inf ever happens.
torch::Tensor MaskedSoftmaxAttention(const torch::Tensor& q, const torch::Tensor& k,
                                     const torch::Tensor& v, const torch::Tensor& mask) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto scores = torch::matmul(q, k.transpose(-1, -2)) * scale;
  const auto any = mask.any(-1, /*keepdim=*/true);
  scores = scores.masked_fill(mask.logical_not().logical_and(any),
                              -std::numeric_limits<double>::infinity());
  scores = scores.masked_fill(any.logical_not(), 0.0);
  auto probs = torch::softmax(scores, -1) * mask.to(scores.scalar_type());
  return torch::matmul(probs, v);
}

// One batched call of the block-sparse attention over head-major qh [H, T, D] and kh, vh
// [H, T + 1, D]: `groups` query groups of lq tokens, each with lk key slots -> [H, groups * lq, D].
torch::Tensor CallAttention(const torch::Tensor& qh, const torch::Tensor& kh,
                            const torch::Tensor& vh, const torch::Tensor& queries,
                            const torch::Tensor& keys, const torch::Tensor& bias, int64_t groups,
                            int64_t lq, int64_t lk) {
  const int64_t H = qh.size(0), D = qh.size(2);
  auto qg = qh.index_select(1, queries).view({H * groups, lq, D});
  auto kg = kh.index_select(1, keys).view({H * groups, lk, D});
  auto vg = vh.index_select(1, keys).view({H * groups, lk, D});
  // The bias broadcasts over the heads in place (bmm's backward does not need its output).
  auto scores = torch::bmm(qg, kg.transpose(1, 2)).view({H, groups, lq, lk});
  scores.add_(bias.view({1, groups, lq, lk}));
  auto probs = torch::softmax(scores, -1).view({H * groups, lq, lk});
  return torch::bmm(probs, vg).view({H, groups * lq, D});
}

// Wan's split of the head into rotary pairs for the frame, row and column axes.
std::array<int64_t, 3> AxisPairs(int64_t head_dim) {
  const int64_t hw = 2 * (head_dim / 6);
  return {(head_dim - 2 * hw) / 2, hw / 2, hw / 2};
}

// The RoPE tables of every token.
void SetRope(const PackedLayout& l, int64_t head_dim, double theta, torch::Device device,
             torch::Dtype dtype, LayoutTensors& lt) {
  const int64_t T = l.tokens;
  // RoPE angles in float64, then cast: positions are small, frequencies span many decades.
  const auto pairs = AxisPairs(head_dim);
  const std::vector<const std::vector<float>*> pos = {&l.pos_f, &l.pos_h, &l.pos_w};
  std::vector<torch::Tensor> angles;
  for (int axis = 0; axis < 3; ++axis) {
    const int64_t n = pairs[axis];
    if (n == 0) continue;
    auto p = torch::from_blob(const_cast<float*>(pos[axis]->data()), {T}, torch::kFloat32)
                 .to(torch::kFloat64);
    auto freq = torch::pow(theta, -torch::arange(n, torch::kFloat64) * 2.0 / double(2 * n));
    angles.push_back(torch::outer(p, freq));
  }
  auto ang = torch::cat(angles, 1).unsqueeze(1);  // [T, 1, hd/2]
  // Per dimension, for the pair-swapped form of ApplyRope: (cos, cos) and (-sin, sin).
  auto cos = ang.cos(), sin = ang.sin();
  lt.rope_cos = torch::stack({cos, cos}, -1).reshape({T, 1, -1}).to(dtype).to(device);
  lt.rope_sin = torch::stack({-sin, sin}, -1).reshape({T, 1, -1}).to(dtype).to(device);
}

// One batched self-attention call of bucket b: its additive bias and gather indices; an empty
// key slot gathers the zero row T.
AttentionCall MakeAttentionCall(const PackedLayout& l, const AttentionBucket& b,
                                torch::Device device, torch::Dtype dtype, LayoutTensors& lt) {
  const int64_t T = l.tokens;
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  AttentionCall c;
  c.groups = b.groups;
  c.lq = b.lq;
  c.lk = b.lk;
  // The exact rule for every (query, key slot) pair of every group; an empty slot allows nothing.
  auto mask = torch::empty({b.groups, 1, b.lq, b.lk}, torch::kBool);
  bool* m = mask.data_ptr<bool>();
  for (int64_t gi = 0; gi < b.groups; ++gi) {
    const int64_t* slot = b.keys.data() + gi * b.lk;
    for (int64_t i = 0; i < b.lq; ++i) {
      const int64_t query = b.queries[gi * b.lq + i];
      for (int64_t j = 0; j < b.lk; ++j) {
        const bool allowed = slot[j] >= 0 && AttentionAllowed(l, query, slot[j]);
        lt.allowed_pairs += allowed;
        *m++ = allowed;
      }
    }
  }
  // Every valid query may attend at least to its own block, so no row of a group is empty and
  // an additive -inf bias is safe (and shared by every layer).
  c.bias = torch::zeros(mask.sizes(), torch::TensorOptions().dtype(dtype))
               .masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity())
               .to(device);
  std::vector<int64_t> keys = b.keys;
  for (auto& k : keys) {
    if (k < 0) k = T;
  }
  c.queries = torch::tensor(b.queries, i64).to(device);
  c.keys = torch::tensor(keys, i64).to(device);
  return c;
}

// Cross-attention: each sample owns the same number of slots in each segment of the row.
void SetSampleOrder(const PackedLayout& l, torch::Device device, torch::Dtype dtype,
                    LayoutTensors& lt) {
  const int64_t T = l.tokens;
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  lt.samples = l.batch;
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(T));
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int clean = 0; clean < 2; ++clean) {
      const int64_t v0 = l.VideoToken(clean, b, 0, 0);
      for (int64_t t = v0; t < v0 + l.padded_frames * l.patches(); ++t) order.push_back(t);
    }
    for (int clean = 0; clean < 2; ++clean) {
      const int64_t a0 = l.ActionToken(clean, b, 0, 0);
      for (int64_t t = a0; t < a0 + l.padded_frames * l.action_steps; ++t) order.push_back(t);
    }
  }
  std::vector<int64_t> inverse(static_cast<size_t>(T));
  std::vector<double> valid(static_cast<size_t>(T));
  for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = int64_t(i);
  for (int64_t t = 0; t < T; ++t) valid[size_t(t)] = l.seq_id[size_t(t)] >= 0 ? 1.0 : 0.0;
  lt.sample_order = torch::tensor(order, i64).to(device);
  lt.sample_order_inverse = torch::tensor(inverse, i64).to(device);
  lt.token_valid = torch::tensor(valid, torch::kFloat64).view({T, 1, 1}).to(dtype).to(device);
}

}  // namespace

LayoutTensors MakeLayoutTensors(const PackedLayout& l, int64_t head_dim, double theta,
                                torch::Device device, torch::Dtype dtype, int64_t call_cost_pairs) {
  LayoutTensors lt;
  lt.tokens = l.tokens;
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);

  SetRope(l, head_dim, theta, device, dtype, lt);

  // Self-attention: the plan's buckets, each one batched call over groups of every sample.
  const AttentionPlan plan = PlanAttention(l, call_cost_pairs);
  std::vector<torch::Tensor> all_queries;
  for (const auto& b : plan.buckets) {
    AttentionCall c = MakeAttentionCall(l, b, device, dtype, lt);
    all_queries.push_back(c.queries);
    lt.calls.push_back(std::move(c));
  }
  lt.computed_pairs = plan.computed_pairs();
  lt.query_positions = all_queries.empty()       ? torch::empty({0}, i64.device(device))
                       : all_queries.size() == 1 ? all_queries[0]
                                                 : torch::cat(all_queries);

  SetSampleOrder(l, device, dtype, lt);
  return lt;
}

torch::Tensor ApplyRope(const torch::Tensor& x, const LayoutTensors& lt) {
  // (x0, x1) -> (x0 cos - x1 sin, x1 cos + x0 sin) as x * (cos, cos) + (x1, x0) * (-sin, sin):
  // the same products and sums, in four ops and without select's zero-filled backward.
  const auto sizes = x.sizes();
  auto swapped = x.reshape({sizes[0], sizes[1], sizes[2] / 2, 2}).flip(-1).reshape(sizes);
  return x * lt.rope_cos + swapped * lt.rope_sin;
}

torch::Tensor BlockSparseAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const LayoutTensors& lt,
                                   int64_t recompute_entries) {
  const int64_t T = q.size(0), H = q.size(1), D = q.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  // Head-major, so a gather along the tokens is already [H * groups, l, D] for the batched
  // matmuls; row T of the keys and values is the zero row of empty slots.
  auto head_major = [&](const torch::Tensor& x, bool zero_row) {
    auto h = x.transpose(0, 1);  // [H, T, D]
    return zero_row ? torch::cat({h, torch::zeros({H, 1, D}, x.options())}, 1) : h.contiguous();
  };
  auto qh = head_major(q * scale, false), kh = head_major(k, true), vh = head_major(v, true);
  std::vector<torch::Tensor> outs;
  const bool recompute = recompute_entries > 0 && torch::GradMode::is_enabled();
  for (const auto& c : lt.calls) {
    if (recompute_entries <= 0) {
      outs.push_back(CallAttention(qh, kh, vh, c.queries, c.keys, c.bias, c.groups, c.lq, c.lk));
      continue;
    }
    // Split so one call's scores stay under the cap (the same split with grad mode off, so the
    // recomputation in backward repeats the forward's calls exactly).
    const int64_t per_call = GroupsPerCall(H, c.lq, c.lk, recompute_entries);
    for (int64_t g0 = 0; g0 < c.groups; g0 += per_call) {
      const int64_t n = std::min(per_call, c.groups - g0);
      const int64_t lq = c.lq, lk = c.lk;
      const bool whole = n == c.groups;
      auto queries = whole ? c.queries : c.queries.narrow(0, g0 * lq, n * lq);
      auto keys = whole ? c.keys : c.keys.narrow(0, g0 * lk, n * lk);
      auto bias = whole ? c.bias : c.bias.narrow(0, g0, n);
      auto call = [queries, keys, bias, n, lq, lk](const std::vector<torch::Tensor>& in) {
        return CallAttention(in[0], in[1], in[2], queries, keys, bias, n, lq, lk);
      };
      // Each input is used once per call, and the calls' gradients meet where they do without
      // recomputation (one sum per input, in the order of the calls).
      outs.push_back(recompute ? Recompute(call, {qh, kh, vh}) : call({qh, kh, vh}));
    }
  }
  auto out = torch::zeros({H, T, D}, q.options());
  if (!outs.empty()) {
    out = out.index_copy(1, lt.query_positions, outs.size() == 1 ? outs[0] : torch::cat(outs, 1));
  }
  return out.transpose(0, 1);  // [T, H, D]
}

torch::Tensor DenseAttentionMask(const PackedLayout& l) {
  const int64_t T = l.tokens;
  // Every pair of the row, from the one rule the block-sparse groups use; rows in parallel (a
  // 64k-token row has 4e9 pairs).
  auto mask = torch::empty({T, T}, torch::kBool);
  bool* m = mask.data_ptr<bool>();
  at::parallel_for(0, T, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      bool* row = m + i * T;
      for (int64_t j = 0; j < T; ++j) row[j] = AttentionAllowed(l, i, j);
    }
  });
  return mask;
}

torch::Tensor DenseMaskedAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const torch::Tensor& mask) {
  auto out = MaskedSoftmaxAttention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                    mask.to(q.device()).unsqueeze(0));
  return out.transpose(0, 1);
}

torch::Tensor DenseMaskedAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const PackedLayout& l) {
  return DenseMaskedAttention(q, k, v, DenseAttentionMask(l));
}

torch::Tensor TextCrossAttention(const torch::Tensor& q, const torch::Tensor& k,
                                 const torch::Tensor& v, const LayoutTensors& lt) {
  const int64_t T = q.size(0), H = q.size(1), D = q.size(2), B = lt.samples;
  if (B == 0) return torch::zeros_like(q);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto qs = q.index_select(0, lt.sample_order).view({B, T / B, H, D}).transpose(1, 2);
  auto p = torch::softmax(torch::matmul(qs, k.permute({0, 2, 3, 1})) * scale, -1);  // [B, H, n, L]
  auto o = torch::matmul(p, v.transpose(1, 2)).transpose(1, 2).reshape({T, H, D});
  // Tokens of padded frames attend to nothing: exact zeros, forward and backward.
  return o.index_select(0, lt.sample_order_inverse) * lt.token_valid;
}

int64_t AllowedPairs(const LayoutTensors& lt) { return lt.allowed_pairs; }

}  // namespace baton
