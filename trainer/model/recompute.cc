#include "trainer/model/recompute.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <atomic>
#include <memory>

namespace baton {

namespace {

std::atomic<int64_t> g_recomputes{0};

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The function and the autocast state travel to backward inside the autograd context.
struct Pending : torch::CustomClassHolder {
  RecomputeFn fn;
  bool autocast_cpu = false, autocast_cuda = false;
  at::ScalarType cpu_dtype = at::kBFloat16, cuda_dtype = at::kBFloat16;
};

void CaptureAutocast(Pending* p) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  p->autocast_cpu = at::autocast::is_autocast_enabled(at::kCPU);
  p->autocast_cuda = at::autocast::is_autocast_enabled(at::kCUDA);
  p->cpu_dtype = at::autocast::get_autocast_dtype(at::kCPU);
  p->cuda_dtype = at::autocast::get_autocast_dtype(at::kCUDA);
#else
  p->autocast_cpu = at::autocast::is_cpu_enabled();
  p->autocast_cuda = at::autocast::is_enabled();
  p->cpu_dtype = at::autocast::get_autocast_cpu_dtype();
  p->cuda_dtype = at::autocast::get_autocast_gpu_dtype();
#endif
}

// Sets the autocast state captured in forward for the recompute; puts the current one back.
class AutocastAs {
 public:
  explicit AutocastAs(const Pending& p) {
    CaptureAutocast(&saved_);
    Set(p);
  }
  ~AutocastAs() { Set(saved_); }

 private:
  static void Set(const Pending& p) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCPU, p.cpu_dtype);
    at::autocast::set_autocast_enabled(at::kCPU, p.autocast_cpu);
    at::autocast::set_autocast_dtype(at::kCUDA, p.cuda_dtype);
    at::autocast::set_autocast_enabled(at::kCUDA, p.autocast_cuda);
#else
    at::autocast::set_autocast_cpu_dtype(p.cpu_dtype);
    at::autocast::set_cpu_enabled(p.autocast_cpu);
    at::autocast::set_autocast_gpu_dtype(p.cuda_dtype);
    at::autocast::set_enabled(p.autocast_cuda);
#endif
  }
  Pending saved_;
};

struct RecomputeFunction : torch::autograd::Function<RecomputeFunction> {
  static variable_list forward(AutogradContext* ctx, c10::intrusive_ptr<Pending> pending,
                               at::TensorList inputs) {
    // Autograd is off here (Function::apply), so fn keeps nothing for backward.
    torch::Tensor out = pending->fn(std::vector<torch::Tensor>(inputs.begin(), inputs.end()));
    ctx->save_for_backward(std::vector<torch::Tensor>(inputs.begin(), inputs.end()));
    ctx->saved_data["pending"] = c10::IValue::make_capsule(pending);
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto pending =
        c10::static_intrusive_pointer_cast<Pending>(ctx->saved_data["pending"].toCapsule());
    const variable_list saved = ctx->get_saved_variables();
    std::vector<torch::Tensor> inputs;
    inputs.reserve(saved.size());
    for (const auto& s : saved) {
      inputs.push_back(s.detach().requires_grad_(s.requires_grad()));
    }
    torch::Tensor out;
    {
      torch::AutoGradMode on(true);
      AutocastAs autocast(*pending);
      out = pending->fn(inputs);
    }
    torch::autograd::backward({out}, {grad_out[0]});
    // The recompute's casts of float32 leaves (biases) went into autocast's cache, which the
    // forward's guard cleared before this backward: left there, the next step's forward would
    // read them, the values of before the update.
    if (pending->autocast_cpu || pending->autocast_cuda) at::autocast::clear_cache();
    g_recomputes.fetch_add(1, std::memory_order_relaxed);
    // One gradient per argument of forward: none for `pending`, then one per input.
    variable_list grads;
    grads.reserve(inputs.size() + 1);
    grads.emplace_back();
    for (const auto& in : inputs) grads.push_back(in.requires_grad() ? in.grad() : torch::Tensor());
    return grads;
  }
};

}  // namespace

torch::Tensor Recompute(RecomputeFn fn, const std::vector<torch::Tensor>& inputs) {
  auto pending = c10::make_intrusive<Pending>();
  pending->fn = std::move(fn);
  CaptureAutocast(pending.get());
  return RecomputeFunction::apply(pending, at::TensorList(inputs))[0];
}

int64_t RecomputeCount() { return g_recomputes.load(std::memory_order_relaxed); }

torch::Tensor Reuse(const torch::Tensor& x) { return x.view_as(x); }

}  // namespace baton
