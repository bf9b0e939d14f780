#include "trainer/train/train_step.h"

#include <chrono>
#include <cmath>

#include "trainer/objective/flow_matching.h"
#include "trainer/train/autocast.h"
#include "trainer/train/device_memory.h"
#include "trainer/train/heartbeat.h"

namespace baton {

namespace {

std::vector<torch::Tensor> Grads(AdamW& optimizer) {
  std::vector<torch::Tensor> out;
  for (auto& s : optimizer.state()) out.push_back(s.param.grad());
  return out;
}

std::vector<torch::Tensor> Params(AdamW& optimizer) {
  std::vector<torch::Tensor> out;
  for (auto& s : optimizer.state()) out.push_back(s.param);
  return out;
}

}  // namespace

LossSums ForwardLoss(VideoActionModel& model, const RunConfig& config, const PaddedBatch& batch,
                     int64_t step, const DatasetShape& shape, torch::Dtype dtype,
                     const torch::Device& device, const torch::Tensor& empty_text,
                     double global_frames, MicroBatch* mb) {
  const bool bf16 = dtype == torch::kBFloat16;
  *mb = PrepareMicroBatch(batch, uint64_t(config.run.seed), step, shape, config.objective,
                          model->dims(), bf16 ? torch::kFloat32 : dtype, device, empty_text);
  AutocastBf16 autocast(bf16, device.is_cuda());
  ModelOutputs out = model->forward(mb->inputs, mb->layout, mb->layout_tensors);
  return ComputeLoss(out, *mb, global_frames, config.objective);
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
  const std::string& checkpointing = c.train.activation_checkpointing;
  d.recompute_blocks = checkpointing == "blocks" || checkpointing == "blocks+attention";
  d.recompute_attention_entries = checkpointing == "blocks+attention" ? kRecomputeCallEntries : 0;
  return d;
}

TrainStepper::TrainStepper(VideoActionModel model, AdamW* optimizer, ProcessGroupHandle* group,
                           const RunConfig& config, const DatasetShape& shape, torch::Dtype dtype,
                           torch::Device device, torch::Tensor empty_text,
                           const ShardPlan* shard_plan)
    : model_(std::move(model)),
      optimizer_(optimizer),
      group_(group),
      config_(config),
      shape_(shape),
      dtype_(dtype),
      device_(device),
      empty_text_(std::move(empty_text)),
      shard_plan_(shard_plan) {}

std::unique_ptr<ShardPlan> ShardOptimizer(const RunConfig& config, int64_t rank, int64_t world,
                                          AdamW& optimizer) {
  if (config.optim.shard == "none" || world <= 1) return nullptr;
  std::vector<int64_t> numels;
  for (const auto& s : optimizer.state()) numels.push_back(s.param.numel());
  auto plan = std::make_unique<ShardPlan>(MakeShardPlan(numels, world));
  std::vector<bool> owned;
  for (int64_t o : plan->owner) owned.push_back(o == rank);
  optimizer.KeepOnly(owned);
  return plan;
}

StepStats TrainStepper::Step(const std::vector<PaddedBatch>& micro_batches, int64_t step,
                             double global_frames, double lr, bool profile, bool stop_requested) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  StepStats st;
  optimizer_->ZeroGrad();
  double video_sum = 0, action_sum = 0;
  double tokens = 0, padded_tokens = 0, samples = 0, valid_frames = 0, padded_frames = 0;
  int64_t micro = 0;
  for (const auto& batch : micro_batches) {
    Beat(HeartbeatPhase::kMicroStep, step, micro++);
    // A CUDA peak is per micro-batch; the CPU's resident peak only ever grows.
    if (profile) ResetDevicePeak(device_);
    const auto m0 = Clock::now();
    MicroBatch mb;
    LossSums loss = ForwardLoss(model_, config_, batch, step, shape_, dtype_, device_, empty_text_,
                                global_frames, &mb);
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
      p.peak_bytes = DevicePeakBytes(device_);
      st.micro.push_back(p);
    }
  }

  for (auto& s : optimizer_->state()) {
    if (!s.param.grad().defined()) s.param.mutable_grad() = torch::zeros_like(s.param);
  }
  Beat(HeartbeatPhase::kUpdate, step, micro);
  auto sums = torch::tensor({video_sum, action_sum, tokens, padded_tokens, samples, valid_frames,
                             padded_frames, stop_requested ? 1.0 : 0.0},
                            torch::kFloat64);
  if (shard_plan_ != nullptr) {
    ReduceSharded(sums, st);
  } else {
    ReduceReplicated(sums, st);
  }
  auto a = sums.accessor<double, 1>();
  st.lr = lr;
  st.loss_video = a[0] / global_frames;
  st.loss_action = a[1] / global_frames;
  st.loss = config_.objective.video_loss_weight * st.loss_video +
            config_.objective.action_loss_weight * st.loss_action;
  st.nonfinite = !std::isfinite(st.loss_video) || !std::isfinite(st.loss_action) ||
                 !std::isfinite(st.loss) || !std::isfinite(st.grad_norm);
  if (!st.nonfinite) {
    optimizer_->Step(lr);
    if (shard_plan_ != nullptr) group_->AllGatherOwned(Params(*optimizer_), *shard_plan_);
  }
  st.tokens = int64_t(a[2] + 0.5);
  st.padded_tokens = int64_t(a[3] + 0.5);
  st.samples = int64_t(a[4] + 0.5);
  st.valid_frames = int64_t(a[5] + 0.5);
  st.padded_frames = int64_t(a[6] + 0.5);
  st.stop = a[7] > 0.5;
  st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return st;
}

// One reduction: every gradient plus the step's sums, in the gradients' dtype.
void TrainStepper::ReduceReplicated(torch::Tensor& sums, StepStats& st) {
  std::vector<torch::Tensor> to_reduce = Grads(*optimizer_);
  auto packed = sums.to(dtype_ == torch::kBFloat16 ? torch::kFloat32 : dtype_).to(device_);
  if (!to_reduce.empty() && to_reduce.back().scalar_type() == packed.scalar_type()) {
    to_reduce.push_back(packed);
  } else {
    to_reduce.insert(to_reduce.begin(), packed);
  }
  group_->AllReduceSum(to_reduce);
  sums = packed.to(torch::kFloat64).cpu();
  st.grad_norm = optimizer_->ClipGradNorm(config_.optim.grad_clip);
}

void TrainStepper::ReduceSharded(torch::Tensor& sums, StepStats& st) {
  group_->ReduceScatterOwned(Grads(*optimizer_), *shard_plan_);
  if (config_.optim.shard == "gradients") {
    // Only the owned part of the reduced gradients is kept; backward reallocates the rest.
    for (auto& s : optimizer_->state()) {
      if (!s.owned) s.param.mutable_grad() = torch::Tensor();
    }
  }
  // The step's sums and this rank's share of the squared gradient norm, reduced in float64.
  auto packed =
      torch::cat({sums, torch::full({1}, optimizer_->OwnedGradSquares(), torch::kFloat64)})
          .to(device_);
  group_->AllReduceSum({packed});
  auto all = packed.cpu();
  st.grad_norm = std::sqrt(all[8].item<double>());
  optimizer_->ClipOwnedGrads(st.grad_norm, config_.optim.grad_clip);
  sums = all.narrow(0, 0, 8).clone();
}

}  // namespace baton
