#include "trainer/optim/adamw.h"

#include <algorithm>
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

namespace {

// As autocast's cast backward then AccumulateGrad: the compute-dtype gradient widened exactly,
// taken whole into an empty buffer laid out like the parameter, otherwise added in float32.
void Widen(AdamW::ParamState& s, const torch::Tensor& grad) {
  if (s.grad32.defined()) {
    s.grad32.add_(grad);
  } else {
    s.grad32 = torch::empty_like(s.param, s.param.options().dtype(torch::kFloat32)).copy_(grad);
  }
}

}  // namespace

AdamW::~AdamW() {
  for (const auto& [i, id] : hooks_) state_[i].param.remove_hook(id);
}

void AdamW::ZeroGrad() {
  for (auto& s : state_) {
    if (s.grad().defined()) s.mutable_grad().zero_();
    // A split parameter's compute-dtype gradient lives only within a micro-step.
    if (s.split && s.param.grad().defined()) s.param.mutable_grad() = torch::Tensor();
    s.arrived = false;
  }
  pending_.clear();
}

void AdamW::SplitMasters(const std::vector<bool>& split, torch::Dtype compute,
                         bool widen_on_arrival) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < state_.size(); ++i) {
    auto& s = state_[i];
    if (!split.at(i) || s.split) continue;
    TORCH_CHECK(s.param.scalar_type() == torch::kFloat32, s.name, " is ", s.param.scalar_type(),
                ", not a float32 master to split");
    if (s.owned) s.master = s.param.detach().clone();
    if (s.param.grad().defined()) {
      s.grad32 = s.param.grad().detach();
      s.param.mutable_grad() = torch::Tensor();
    }
    // The model's own tensor changes dtype in place, so every module and handle sees the copy.
    s.param.set_data(s.param.detach().to(compute));
    s.split = true;
    any_split_ = true;
    // Runs once per backward, just before the leaf's AccumulateGrad, with the summed gradient;
    // an undefined return leaves that gradient as it is.
    if (widen_on_arrival) {
      hooks_.emplace_back(i, s.param.register_hook([this, i](const torch::Tensor& grad) {
        TakeSplitGrad(i, grad);
        return torch::Tensor();
      }));
    }
  }
}

int64_t AdamW::split_count() const {
  int64_t n = 0;
  for (const auto& s : state_) n += s.split ? 1 : 0;
  return n;
}

void AdamW::NoteComputeGrads() {
  int64_t live = 0;
  for (const auto& s : state_) live += s.split && s.param.grad().defined() ? 1 : 0;
  peak_compute_grads_ = std::max(peak_compute_grads_, live);
}

void AdamW::TakeSplitGrad(size_t i, const torch::Tensor& grad) {
  if (!grad.defined()) return;
  torch::NoGradGuard no_grad;
  NoteComputeGrads();
  auto& s = state_[i];
  // Twice in one backward, the whole-graph path would sum the two in bf16 before widening.
  TORCH_CHECK(!s.arrived, "the gradient of ", s.name,
              " arrived twice in one backward: widening each apart would round differently "
              "from the bf16 sum the replicated layout takes");
  Widen(s, grad);
  s.arrived = true;
  // The earlier ones' AccumulateGrad has run (one engine thread per device, a node at a time):
  // their bf16 .grad is read.
  for (size_t j : pending_) state_[j].param.mutable_grad() = torch::Tensor();
  pending_.assign(1, i);
}

void AdamW::AccumulateSplitGrads() {
  if (!any_split_) return;
  torch::NoGradGuard no_grad;
  NoteComputeGrads();
  for (auto& s : state_) {
    if (!s.split) continue;
    // A hook took an arrived gradient already; the rest (no hooks) are widened here.
    if (s.param.grad().defined()) {
      if (!s.arrived) Widen(s, s.param.grad());
      s.param.mutable_grad() = torch::Tensor();
    }
    s.arrived = false;
  }
  pending_.clear();
}

double AdamW::OwnedGradSquares() const {
  double sq = 0.0;
  for (const auto& s : state_) {
    if (!s.owned || !s.grad().defined()) continue;
    sq += s.grad().to(torch::kFloat64).pow(2).sum().item<double>();
  }
  return sq;
}

void AdamW::ClipOwnedGrads(double norm, double max_norm) {
  if (max_norm <= 0.0) return;
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return;
  for (auto& s : state_) {
    if (s.owned && s.grad().defined()) s.mutable_grad().mul_(coef);
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
    if (!state_[i].owned) {
      state_[i].exp_avg = state_[i].exp_avg_sq = torch::Tensor();
      state_[i].master = torch::Tensor();
    }
  }
}

void AdamW::Step(double lr) {
  torch::NoGradGuard no_grad;
  const double b1 = options_.betas[0], b2 = options_.betas[1];
  for (auto& s : state_) {
    if (s.owned && !s.grad().defined()) continue;
    // Every rank counts every parameter's t (a sharded rank may have freed the gradients it does
    // not own): a checkpoint's step.<p> is the same whoever writes it.
    s.step += 1;
    if (!s.owned) continue;
    const auto& g = s.grad();
    torch::Tensor p = s.split ? s.master : s.param;
    p.mul_(1.0 - lr * options_.weight_decay);
    s.exp_avg.mul_(b1).add_(g, 1.0 - b1);
    s.exp_avg_sq.mul_(b2).addcmul_(g, g, 1.0 - b2);
    const double bc1 = 1.0 - std::pow(b1, double(s.step));
    const double bc2 = 1.0 - std::pow(b2, double(s.step));
    auto denom = (s.exp_avg_sq.sqrt() / std::sqrt(bc2)).add_(options_.eps);
    p.addcdiv_(s.exp_avg, denom, -lr / bc1);
    // The owner's copy is the master rounded once, exactly autocast's cast of it.
    if (s.split) s.param.copy_(s.master);
  }
}

}  // namespace baton
