#include "trainer/train/train_step.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>

#include "trainer/objective/flow_matching.h"
#include "trainer/train/autocast.h"

namespace baton {

int64_t PeakRssBytes() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return int64_t(ru.ru_maxrss) * 1024;
}

ModelDims MakeModelDims(const RunConfig& c, const DatasetShape& s) {
  ModelDims d;
  d.channels = s.channels;
  d.patch = c.model.patch_size;
  d.action_dim = s.action_dim;
  d.action_steps = s.action_steps;
  d.text_dim = s.text_dim;
  d.dim = c.model.dim;
  d.heads = c.model.heads;
  d.layers = c.model.layers;
  d.ffn_dim = c.model.ffn_dim;
  d.freq_dim = c.model.freq_dim;
  d.rope_theta = c.model.rope_theta;
  d.eps = c.model.eps;
  d.recompute_blocks = c.train.activation_checkpointing == "blocks";
  return d;
}

TrainStepper::TrainStepper(VideoActionModel model, AdamW* optimizer, ProcessGroupHandle* group,
                           const RunConfig& config, const DatasetShape& shape, torch::Dtype dtype,
                           torch::Device device, torch::Tensor empty_text)
    : model_(std::move(model)),
      optimizer_(optimizer),
      group_(group),
      config_(config),
      shape_(shape),
      dtype_(dtype),
      device_(device),
      empty_text_(std::move(empty_text)) {}

StepStats TrainStepper::Step(const std::vector<PaddedBatch>& micro_batches, int64_t step,
                             double global_frames, double lr, bool profile,
                             bool stop_requested) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const ModelDims dims = model_->dims();
  StepStats st;
  optimizer_->ZeroGrad();
  double video_sum = 0, action_sum = 0;
  double tokens = 0, padded_tokens = 0, samples = 0, valid_frames = 0, padded_frames = 0;
  for (const auto& batch : micro_batches) {
    const auto m0 = Clock::now();
    // bf16 runs feed float32 inputs to float32 master weights; autocast does the bf16 compute.
    const bool bf16 = dtype_ == torch::kBFloat16;
    MicroBatch mb = PrepareMicroBatch(batch, uint64_t(config_.run.seed), step, shape_,
                                      config_.objective, dims, bf16 ? torch::kFloat32 : dtype_,
                                      device_, empty_text_);
    LossSums loss;
    {
      AutocastBf16 autocast(bf16, device_.is_cuda());
      ModelOutputs out = model_->forward(mb.inputs, mb.layout, mb.layout_tensors);
      loss = ComputeLoss(out, mb, global_frames, config_.objective);
    }
    loss.total.backward();
    video_sum += loss.video.item<double>();
    action_sum += loss.action.item<double>();
    tokens += double(mb.tokens);
    padded_tokens += double(mb.padded_tokens);
    samples += double(mb.samples);
    valid_frames += double(mb.valid_frames);
    padded_frames += double(mb.padded_frames);
    if (profile) {
      MicroProfile p;
      p.tokens = mb.layout.tokens;
      p.fwd_bwd_s = std::chrono::duration<double>(Clock::now() - m0).count();
      p.peak_bytes = PeakRssBytes();
      st.micro.push_back(p);
    }
  }

  // One reduction: every gradient plus the step's sums, in the gradients' dtype.
  std::vector<torch::Tensor> to_reduce;
  for (auto& s : optimizer_->state()) {
    if (!s.param.grad().defined()) s.param.mutable_grad() = torch::zeros_like(s.param);
    to_reduce.push_back(s.param.grad());
  }
  auto sums = torch::tensor({video_sum, action_sum, tokens, padded_tokens, samples, valid_frames,
                             padded_frames, stop_requested ? 1.0 : 0.0},
                            torch::kFloat64)
                  .to(dtype_ == torch::kBFloat16 ? torch::kFloat32 : dtype_)
                  .to(device_);
  if (!to_reduce.empty() && to_reduce.back().scalar_type() == sums.scalar_type()) {
    to_reduce.push_back(sums);
  } else {
    to_reduce.insert(to_reduce.begin(), sums);
  }
  group_->AllReduceSum(to_reduce);
  auto s = sums.to(torch::kFloat64).cpu();
  auto a = s.accessor<double, 1>();

  st.grad_norm = optimizer_->ClipGradNorm(config_.optim.grad_clip);
  st.lr = lr;
  st.loss_video = a[0] / global_frames;
  st.loss_action = a[1] / global_frames;
  st.loss = config_.objective.video_loss_weight * st.loss_video +
            config_.objective.action_loss_weight * st.loss_action;
  st.nonfinite = !std::isfinite(st.loss_video) || !std::isfinite(st.loss_action) ||
                 !std::isfinite(st.loss) || !std::isfinite(st.grad_norm);
  if (!st.nonfinite) optimizer_->Step(lr);
  st.tokens = int64_t(a[2] + 0.5);
  st.padded_tokens = int64_t(a[3] + 0.5);
  st.samples = int64_t(a[4] + 0.5);
  st.valid_frames = int64_t(a[5] + 0.5);
  st.padded_frames = int64_t(a[6] + 0.5);
  st.stop = a[7] > 0.5;
  st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return st;
}

}  // namespace baton
