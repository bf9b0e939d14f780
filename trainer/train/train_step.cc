#include "trainer/train/train_step.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "schema/exit_codes.h"
#include "trainer/fail.h"
#include "trainer/model/autocast.h"
#include "trainer/model/block_hook.h"
#include "trainer/objective/flow_matching.h"
#include "trainer/train/device_memory.h"
#include "trainer/train/heartbeat.h"
#include "trainer/train/step_stop_watch.h"
#include "trainer/train/stop_signal.h"

namespace baton {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<torch::Tensor> Grads(AdamW& optimizer) {
  std::vector<torch::Tensor> out;
  for (auto& s : optimizer.state()) out.push_back(s.grad());
  return out;
}

// What the all-gather moves: the parameters, or with split ones every tensor as bf16 elements
// (a float32 parameter that stays whole as the bf16 view of its bytes: bits, not values).
std::vector<torch::Tensor> Params(AdamW& optimizer) {
  std::vector<torch::Tensor> out;
  for (auto& s : optimizer.state()) {
    if (!optimizer.any_split() || s.split) {
      out.push_back(s.param);
    } else {
      out.push_back(s.param.detach().view({-1}).view(torch::kBFloat16));
    }
  }
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

TrainStepper::TrainStepper(VideoActionModel model, AdamW* optimizer, ProcessGroupHandle* group,
                           const RunConfig& config, const DatasetShape& shape, torch::Dtype dtype,
                           torch::Device device, torch::Tensor empty_text,
                           const ShardPlan* shard_plan, const StepperTestHooks& hooks)
    : model_(std::move(model)),
      optimizer_(optimizer),
      group_(group),
      config_(config),
      shape_(shape),
      dtype_(dtype),
      device_(device),
      empty_text_(std::move(empty_text)),
      shard_plan_(shard_plan) {
  // Test hooks (docs/trainer.md): a slow block, and a real SIGUSR1 at a chosen boundary of one
  // rank ("PHASE:STEP[:MICRO[:BLOCK]][@RANK]").
  block_sleep_us_ = hooks.block_sleep_us;
  if (!hooks.signal_at.empty()) {
    std::string spec = hooks.signal_at;
    const size_t rank_at = spec.find('@');
    const bool mine =
        rank_at == std::string::npos || std::atoll(spec.c_str() + rank_at + 1) == group_->rank();
    if (rank_at != std::string::npos) spec.resize(rank_at);
    if (!ArmTestSignal(spec.c_str())) {
      BATON_FAIL(kExitConfig, "BATON_TEST_SIGNAL_AT=" + hooks.signal_at + " is malformed",
                 "use PHASE:STEP[:MICRO[:BLOCK]][@RANK], PHASE forward|backward|micro|update|save");
    }
    if (!mine) ArmTestSignal("");  // checked on every rank, armed on one
  }
  if (shard_plan_ != nullptr && optimizer_->any_split()) {
    std::vector<int64_t> numels;
    for (const auto& t : Params(*optimizer_)) numels.push_back(t.numel());
    gather_plan_ = ReshapeShardPlan(*shard_plan_, numels);
  }
}

void SplitComputeCopies(const RunConfig& config, torch::Dtype dtype, VideoActionModel& model,
                        AdamW& optimizer, bool widen_after_backward) {
  if (config.optim.master != OptimMaster::kSharded || dtype != torch::kBFloat16) return;
  optimizer.SplitMasters(MatmulParameters(model, optimizer), torch::kBFloat16,
                         /*widen_on_arrival=*/!widen_after_backward);
}

std::vector<bool> MatmulParameters(VideoActionModel& model, const AdamW& optimizer) {
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  std::set<std::string> matmul;
  for (const auto& m : model->named_modules()) {
    if (m.value()->as<torch::nn::Linear>() == nullptr) continue;
    const std::string& k = m.key();
    // libtorch's Linear casts its weight per call (a transposed view, never cached): the input
    // projections, applied to the noisy and the clean tokens, sum two float32 gradients, which
    // one bf16 copy would sum in bf16. They stay float32 (a few thousand elements per row).
    if (k == "patch_embedding_mlp" || k == "action_embedder") continue;
    matmul.insert(k + ".weight");
    // On 3-D inputs (the text projection, cross-attention's keys and values over the text)
    // Linear is matmul, then `+= bias` with the float32 bias: a bf16 bias would round the sum
    // differently.
    const bool on_text = k.find("text_embedder.") != std::string::npos ||
                         ends_with(k, "attn2.to_k") || ends_with(k, "attn2.to_v");
    if (!on_text) matmul.insert(k + ".bias");
  }
  std::vector<bool> out;
  for (const auto& s : optimizer.state()) out.push_back(matmul.count(s.name) > 0);
  return out;
}

std::unique_ptr<ShardPlan> ShardOptimizer(const RunConfig& config, int64_t rank, int64_t world,
                                          AdamW& optimizer) {
  if (config.optim.shard == ShardMode::kNone || world <= 1) return nullptr;
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
  const auto t0 = Clock::now();
  StepStats st;
  optimizer_->ZeroGrad();
  auto watch = std::make_shared<BlockWatch>();
  watch->step = step;
  watch->layers = model_->dims().layers;
  watch->sleep_us = block_sleep_us_;
  watch->forward_s.assign(size_t(watch->layers), 0.0);
  StepSums sums;
  const std::string left = MicroSteps(micro_batches, step, global_frames, profile, watch, sums, st);
  // The latest step's figure: warm, unlike the first step's (thread pools, allocations).
  if (watch->longest_s > 0) block_s_ = watch->longest_s;

  // The vote. The flag is read before the phase becomes the update: a signal from here on waits
  // for the update (and the next step is abandoned at its start).
  const int signal = StopSignal();
  SetStopPhase(StopPhase::kUpdate, step);
  const Vote vote = TakeVote(*group_, !left.empty() || signal != 0, stop_requested, signal);
  if (vote.abandon) {
    optimizer_->ZeroGrad();
    AdoptStopSignal(vote.signal);
    st.abandoned = Abandoned(vote, step, block_s_, *watch, left);
    SetStopPhase(StopPhase::kBetweenSteps, step);
    return st;
  }
  Update(step, int64_t(micro_batches.size()), sums, global_frames, lr, st);
  st.stop = vote.stop;
  st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  SetStopPhase(StopPhase::kBetweenSteps, step);
  return st;
}

std::string TrainStepper::MicroSteps(const std::vector<PaddedBatch>& micro_batches, int64_t step,
                                     double global_frames, bool profile,
                                     const std::shared_ptr<BlockWatch>& watch, StepSums& sums,
                                     StepStats& st) {
  if (micro_batches.empty()) {
    // The loop reads no data for a step that a signal already ends.
    TORCH_CHECK(StopSignal() != 0, "a step needs micro-batches");
    return "at the start of step " + std::to_string(step + 1) + ", before reading its data";
  }
  // Only a flag read at each boundary: the ranks vote once, after, so a rank that stops in a
  // block and one that never got the signal still meet at the same collective.
  ScopedBlockHook hook([watch](BlockPass pass, int64_t block) { watch->At(pass, block); });
  try {
    for (size_t m = 0; m < micro_batches.size(); ++m) {
      watch->micro = int64_t(m);
      watch->block = -2;
      SetStopPhase(StopPhase::kMicroStart, step, int64_t(m));
      Beat(HeartbeatPhase::kMicroStep, step, int64_t(m));
      if (StopSignal() != 0) {
        throw LeaveMicroSteps(Where(StopPhase::kMicroStart, step, int64_t(m), -1));
      }
      MicroStep(micro_batches[m], step, global_frames, profile, sums, st);
    }
  } catch (const LeaveMicroSteps& e) {
    return e.where;
  }
  return "";
}

void TrainStepper::MicroStep(const PaddedBatch& batch, int64_t step, double global_frames,
                             bool profile, StepSums& sums, StepStats& st) {
  // A CUDA peak is per micro-batch; the CPU's resident peak only ever grows.
  if (profile) ResetDevicePeak(device_);
  const auto m0 = Clock::now();
  MicroBatch mb;
  LossSums loss = ForwardLoss(model_, config_, batch, step, shape_, dtype_, device_, empty_text_,
                              global_frames, &mb);
  // The split parameters' hooks widen their bf16 gradients as they arrive; this frees the last
  // ones.
  loss.total.backward();
  optimizer_->AccumulateSplitGrads();
  sums.video += loss.video.item<double>();
  sums.action += loss.action.item<double>();
  sums.tokens += double(mb.tokens);
  sums.padded_tokens += double(mb.padded_tokens);
  sums.samples += double(mb.samples);
  sums.valid_frames += double(mb.valid_frames);
  sums.padded_frames += double(mb.padded_frames);
  if (profile) {
    MicroProfile p;
    p.tokens = mb.layout.tokens;
    p.fwd_bwd_s = std::chrono::duration<double>(Clock::now() - m0).count();
    p.peak_bytes = DevicePeakBytes(device_);
    st.micro.push_back(p);
  }
}

void TrainStepper::Update(int64_t step, int64_t micro_steps, const StepSums& step_sums,
                          double global_frames, double lr, StepStats& st) {
  for (auto& s : optimizer_->state()) {
    if (!s.grad().defined())
      s.mutable_grad() =
          torch::zeros(s.param.sizes(),
                       s.param.options().dtype(s.split ? torch::kFloat32 : s.param.scalar_type()));
  }
  Beat(HeartbeatPhase::kUpdate, step, micro_steps);
  auto sums =
      torch::tensor({step_sums.video, step_sums.action, step_sums.tokens, step_sums.padded_tokens,
                     step_sums.samples, step_sums.valid_frames, step_sums.padded_frames},
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
    if (shard_plan_ != nullptr) {
      group_->AllGatherOwned(Params(*optimizer_),
                             optimizer_->any_split() ? gather_plan_ : *shard_plan_);
    }
  }
  st.tokens = int64_t(a[2] + 0.5);
  st.padded_tokens = int64_t(a[3] + 0.5);
  st.samples = int64_t(a[4] + 0.5);
  st.valid_frames = int64_t(a[5] + 0.5);
  st.padded_frames = int64_t(a[6] + 0.5);
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
  if (config_.optim.shard == ShardMode::kGradients) {
    // Only the owned part of the reduced gradients is kept; backward reallocates the rest.
    for (auto& s : optimizer_->state()) {
      if (!s.owned) s.mutable_grad() = torch::Tensor();
    }
  }
  // The step's sums and this rank's share of the squared gradient norm, reduced in float64.
  auto packed =
      torch::cat({sums, torch::full({1}, optimizer_->OwnedGradSquares(), torch::kFloat64)})
          .to(device_);
  group_->AllReduceSum({packed});
  auto all = packed.cpu();
  const int64_t n = sums.size(0);
  st.grad_norm = std::sqrt(all[n].item<double>());
  optimizer_->ClipOwnedGrads(st.grad_norm, config_.optim.grad_clip);
  sums = all.narrow(0, 0, n).clone();
}

}  // namespace baton
