#include "trainer/model/attention.h"

#include <cmath>

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

// Wan's split of the head into rotary pairs for the frame, row and column axes.
std::array<int64_t, 3> AxisPairs(int64_t head_dim) {
  const int64_t hw = 2 * (head_dim / 6);
  return {(head_dim - 2 * hw) / 2, hw / 2, hw / 2};
}

}  // namespace

LayoutTensors MakeLayoutTensors(const PackedLayout& l, int64_t head_dim, double theta,
                                torch::Device device, torch::Dtype dtype) {
  LayoutTensors lt;
  lt.tokens = l.tokens;
  const int64_t T = l.tokens;
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);

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
  lt.rope_cos = ang.cos().to(dtype).to(device);
  lt.rope_sin = ang.sin().to(dtype).to(device);

  std::vector<torch::Tensor> all_queries;
  for (const auto& a : l.attention) {
    AttentionGroups g;
    g.groups = a.groups;
    g.lq = a.lq;
    g.lk = a.lk;
    if (a.groups == 0) {
      lt.samples.push_back(g);
      lt.sample_tokens.push_back(torch::empty({0}, i64.device(device)));
      continue;
    }
    std::vector<int64_t> keys = a.keys;
    for (auto& k : keys) {
      if (k < 0) k = T;
    }
    auto q = torch::tensor(a.queries, i64);
    auto k = torch::tensor(keys, i64);
    // The exact rule for every (query, key slot) pair of every group; an empty slot allows nothing.
    auto mask = torch::empty({a.groups, 1, a.lq, a.lk}, torch::kBool);
    bool* m = mask.data_ptr<bool>();
    for (int64_t gi = 0; gi < a.groups; ++gi) {
      const int64_t* slot = a.keys.data() + gi * a.lk;
      for (int64_t i = 0; i < a.lq; ++i) {
        const int64_t query = a.queries[gi * a.lq + i];
        for (int64_t j = 0; j < a.lk; ++j) {
          *m++ = slot[j] >= 0 && AttentionAllowed(l, query, slot[j]);
        }
      }
    }
    g.mask = mask.to(device);
    // Every valid query may attend at least to its own block, so no row of a group is empty and
    // an additive -inf bias is safe (and shared by every layer).
    g.bias = torch::zeros(g.mask.sizes(), torch::TensorOptions().dtype(dtype).device(device))
                 .masked_fill(g.mask.logical_not(), -std::numeric_limits<double>::infinity());
    g.queries = q.to(device);
    g.keys = k.to(device);
    all_queries.push_back(g.queries);
    lt.samples.push_back(g);
    // Every valid token of the sample is a query of exactly one group.
    lt.sample_tokens.push_back(std::get<0>(torch::sort(q)).to(device));
  }
  lt.valid_query_positions =
      all_queries.empty() ? torch::empty({0}, i64.device(device)) : torch::cat(all_queries);
  return lt;
}

torch::Tensor ApplyRope(const torch::Tensor& x, const LayoutTensors& lt) {
  const auto sizes = x.sizes();
  auto pairs = x.reshape({sizes[0], sizes[1], sizes[2] / 2, 2});
  auto x0 = pairs.select(-1, 0), x1 = pairs.select(-1, 1);
  auto r0 = x0 * lt.rope_cos - x1 * lt.rope_sin;
  auto r1 = x0 * lt.rope_sin + x1 * lt.rope_cos;
  return torch::stack({r0, r1}, -1).reshape(sizes);
}

torch::Tensor BlockSparseAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const LayoutTensors& lt) {
  const int64_t T = q.size(0), H = q.size(1), D = q.size(2);
  auto zero = torch::zeros({1, H, D}, q.options());
  auto k_ext = torch::cat({k, zero}), v_ext = torch::cat({v, zero});
  std::vector<torch::Tensor> outs;
  for (const auto& g : lt.samples) {
    if (g.groups == 0) continue;
    auto qg = q.index_select(0, g.queries).view({g.groups, g.lq, H, D}).transpose(1, 2);
    auto kg = k_ext.index_select(0, g.keys).view({g.groups, g.lk, H, D}).transpose(1, 2);
    auto vg = v_ext.index_select(0, g.keys).view({g.groups, g.lk, H, D}).transpose(1, 2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    auto probs = torch::softmax(torch::matmul(qg, kg.transpose(-1, -2)) * scale + g.bias, -1);
    auto o = torch::matmul(probs, vg);  // [G, H, lq, D]
    outs.push_back(o.transpose(1, 2).reshape({g.groups * g.lq, H, D}));
  }
  auto out = torch::zeros({T, H, D}, q.options());
  if (outs.empty()) return out;
  return out.index_copy(0, lt.valid_query_positions, torch::cat(outs));
}

torch::Tensor DenseMaskedAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const PackedLayout& l) {
  const int64_t T = q.size(0);
  // Every pair of the row, from the one rule the block-sparse groups use.
  auto mask = torch::empty({T, T}, torch::kBool);
  bool* m = mask.data_ptr<bool>();
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t j = 0; j < T; ++j) *m++ = AttentionAllowed(l, i, j);
  }
  auto out = MaskedSoftmaxAttention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                    mask.to(q.device()).unsqueeze(0));
  return out.transpose(0, 1);
}

int64_t AllowedPairs(const LayoutTensors& lt) {
  int64_t n = 0;
  for (const auto& g : lt.samples) {
    if (g.groups > 0) n += g.mask.sum().item<int64_t>();
  }
  return n;
}

}  // namespace baton
