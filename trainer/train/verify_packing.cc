#include "trainer/train/verify_packing.h"

#include <cmath>

#include "trainer/data/pad_collate.h"
#include "trainer/objective/flow_matching.h"
#include "trainer/train/train_step.h"

namespace baton {

double MaxRelDiff(const torch::Tensor& a, const torch::Tensor& b) {
  auto a64 = a.detach().to(torch::kFloat64), b64 = b.detach().to(torch::kFloat64);
  const double scale = std::max(b64.abs().max().item<double>(), 1e-300);
  return (a64 - b64).abs().max().item<double>() / scale;
}

PackingComparison ComparePackedWithSingle(VideoActionModel& model, const RunConfig& config,
                                          const std::vector<EpisodeData>& episodes, int64_t step,
                                          torch::Dtype dtype, const std::string& name,
                                          const torch::Tensor& empty_text) {
  PackingComparison r;
  r.name = name;
  const DatasetShape shape = episodes.at(0).shape;
  const torch::Device device = model->parameters().front().device();
  double frames = 0;
  for (const auto& e : episodes) {
    r.frames.push_back(e.frames);
    frames += double(e.frames);
  }
  int64_t row_tokens = 0;
  auto run = [&](const std::vector<EpisodeData>& eps) {
    const PaddedBatch batch = PadCollate(eps, config.data.pad_multiple);
    MicroBatch mb;
    LossSums loss =
        ForwardLoss(model, config, batch, step, shape, dtype, device, empty_text, frames, &mb);
    loss.total.backward();
    row_tokens = std::max(row_tokens, mb.layout.tokens);
    return std::make_pair(loss.total.item<double>(), batch.padded_frames);
  };
  auto grads = [&] {
    std::vector<std::pair<std::string, torch::Tensor>> g;
    for (const auto& [name, p] : TrainableParameters(model)) g.push_back({name, p.grad().clone()});
    return g;
  };
  auto zero = [&] {
    for (auto& p : model->parameters()) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
  };

  zero();
  auto [packed_loss, fp] = run(episodes);
  r.loss_packed = packed_loss;
  r.padded_frames = fp;
  const auto packed = grads();
  zero();
  for (const auto& e : episodes) r.loss_single += run({e}).first;
  const auto single = grads();

  r.row_tokens = row_tokens;
  r.loss_rel_diff =
      std::abs(r.loss_packed - r.loss_single) / std::max(std::abs(r.loss_single), 1e-300);
  double diff_sq = 0, ref_sq = 0;
  for (size_t i = 0; i < packed.size(); ++i) {
    diff_sq += (packed[i].second.to(torch::kFloat64) - single[i].second.to(torch::kFloat64))
                   .pow(2)
                   .sum()
                   .item<double>();
    ref_sq += single[i].second.to(torch::kFloat64).pow(2).sum().item<double>();
    ++r.grads_total;
    if (torch::isfinite(packed[i].second).all().item<bool>()) ++r.grads_finite;
    const double d = MaxRelDiff(packed[i].second, single[i].second);
    if (d > r.max_grad_rel_diff || r.worst_param.empty()) {
      r.max_grad_rel_diff = std::max(d, r.max_grad_rel_diff);
      r.worst_param = packed[i].first;
    }
  }
  r.grad_norm_rel_diff = std::sqrt(diff_sq / std::max(ref_sq, 1e-300));
  zero();
  return r;
}

}  // namespace baton
