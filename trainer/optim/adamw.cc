#include "trainer/optim/adamw.h"

#include <cmath>

namespace baton {

AdamW::AdamW(std::vector<std::pair<std::string, torch::Tensor>> params, const OptimSection& options)
    : options_(options) {
  for (auto& [name, p] : params) {
    ParamState s;
    s.name = name;
    s.param = p;
    s.exp_avg = torch::zeros_like(p);
    s.exp_avg_sq = torch::zeros_like(p);
    state_.push_back(std::move(s));
  }
}

void AdamW::ZeroGrad() {
  for (auto& s : state_) {
    if (s.param.grad().defined()) s.param.mutable_grad().zero_();
  }
}

double AdamW::OwnedGradSquares() const {
  double sq = 0.0;
  for (const auto& s : state_) {
    if (!s.owned || !s.param.grad().defined()) continue;
    sq += s.param.grad().to(torch::kFloat64).pow(2).sum().item<double>();
  }
  return sq;
}

void AdamW::ClipOwnedGrads(double norm, double max_norm) {
  if (max_norm <= 0.0) return;
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return;
  for (auto& s : state_) {
    if (s.owned && s.param.grad().defined()) s.param.mutable_grad().mul_(coef);
  }
}

double AdamW::ClipGradNorm(double max_norm) {
  const double norm = std::sqrt(OwnedGradSquares());
  ClipOwnedGrads(norm, max_norm);
  return norm;
}

void AdamW::KeepOnly(const std::vector<bool>& owned) {
  for (size_t i = 0; i < state_.size(); ++i) {
    state_[i].owned = owned.at(i);
    if (!state_[i].owned) state_[i].exp_avg = state_[i].exp_avg_sq = torch::Tensor();
  }
}

void AdamW::Step(double lr) {
  torch::NoGradGuard no_grad;
  const double b1 = options_.betas[0], b2 = options_.betas[1];
  for (auto& s : state_) {
    if (s.owned && !s.param.grad().defined()) continue;
    // Every rank counts every parameter's t (a sharded rank may have freed the gradients it does
    // not own): a checkpoint's step.<p> is the same whoever writes it.
    s.step += 1;
    if (!s.owned) continue;
    const auto& g = s.param.grad();
    s.param.mul_(1.0 - lr * options_.weight_decay);
    s.exp_avg.mul_(b1).add_(g, 1.0 - b1);
    s.exp_avg_sq.mul_(b2).addcmul_(g, g, 1.0 - b2);
    const double bc1 = 1.0 - std::pow(b1, double(s.step));
    const double bc2 = 1.0 - std::pow(b2, double(s.step));
    auto denom = (s.exp_avg_sq.sqrt() / std::sqrt(bc2)).add_(options_.eps);
    s.param.addcdiv_(s.exp_avg, denom, -lr / bc1);
  }
}

}  // namespace baton
