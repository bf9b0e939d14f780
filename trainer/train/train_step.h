// TrainStepper: one optimizer step — micro-steps of forward/loss/backward, one gradient
// all-reduce, clip, AdamW update — and the figures the progress line and the events report.
//
// The caller hands over the step's micro-batches for this rank and the global count of valid
// frames of the whole step (all micro-steps, all ranks; the sampler plan is a pure function, so
// it is known without communication). A step whose loss or gradient norm is not finite is not
// applied: one bad episode or one overflow must not turn every weight into NaN. Gradients
// accumulate over micro-steps in .grad and are summed across ranks once, together with the step's
// loss sums and token counts (one bucketed reduction per step). With sharded optimizer state
// (optim.shard, `plan` given) the gradients are instead reduce-scattered once (each rank gets the
// sums of the parameters it owns), the step's sums and the owned gradients' squared norm are
// all-reduced as one small tensor, each rank clips and updates what it owns, and one all-gather
// hands the new weights to every rank. With optim.master sharded in a bf16 run (SplitComputeCopies)
// the matmul weights are bf16 copies the forward uses as they are: each micro-step's bf16
// gradients go into float32 buffers after its backward, the float32 gradients are reduce-
// scattered, the owners update their masters and round them, and the all-gather moves the bf16
// copies (the float32 parameters that stay whole travel in it as two bf16 halves each).
//
// A stop signal (stop_signal.h) abandons the step: each rank checks its own flag between
// transformer blocks, forward and backward, and between micro-steps, and leaves the micro-steps
// at the first boundary after it was raised. Before any gradient leaves a rank, the ranks vote
// once (a few bytes): when any rank abandoned or holds a signal, every rank zeroes its gradients
// and Step returns StepAbandoned (step_abandon.h) — weights, AdamW state and the data position are
// still those of the step's start (the noise draws are a function of seed, step and episode, so
// there is no RNG state to put back). A signal after the vote waits for the update. The protocol
// is in docs/trainer.md. Not thread-safe; owns no data, borrows model, optimizer, group and plan.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schema/run_config.h"
#include "trainer/data/pad_collate.h"
#include "trainer/distributed/process_group.h"
#include "trainer/distributed/shard_plan.h"
#include "trainer/model/video_action_model.h"
#include "trainer/objective/flow_matching.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/run_model_dims.h"
#include "trainer/train/step_abandon.h"
#include "trainer/train/step_stop_watch.h"
#include "trainer/train/trainer_environment.h"

namespace baton {

struct MicroProfile {
  int64_t tokens = 0;  // tokens in the packed row (valid + padded frames)
  double fwd_bwd_s = 0.0;
  int64_t peak_bytes = 0;  // process peak RSS on CPU, peak allocated on CUDA
};

struct StepStats {
  double loss = 0, loss_video = 0, loss_action = 0;  // global, per valid frame
  double grad_norm = 0, lr = 0, seconds = 0;
  int64_t tokens = 0, padded_tokens = 0, samples = 0;  // global
  int64_t valid_frames = 0, padded_frames = 0;         // global
  std::vector<MicroProfile> micro;                     // this rank, when profiling
  // Some rank asked to stop after this step (`stop_requested`: a test's --stop-after, a changed
  // run folder), agreed in the step's vote. A signal abandons the step instead.
  bool stop = false;
  // The loss or the gradient norm was NaN/Inf: the update was skipped (weights and AdamW state
  // untouched). Decided from reduced values, so every rank decides the same.
  bool nonfinite = false;
  // A stop signal abandoned the step before its update: nothing of it was applied, and the
  // other fields are unset.
  std::optional<StepAbandoned> abandoned;
};

class TrainStepper {
 public:
  TrainStepper(VideoActionModel model, AdamW* optimizer, ProcessGroupHandle* group,
               const RunConfig& config, const DatasetShape& shape, torch::Dtype dtype,
               torch::Device device, torch::Tensor empty_text = torch::Tensor(),
               const ShardPlan* shard_plan = nullptr, const StepperTestHooks& hooks = {});

  // `stop_requested`: this rank asks to stop after this step; every rank learns it in
  // StepStats::stop. Returns with StepStats::abandoned set, on every rank alike, when a stop
  // signal came first.
  StepStats Step(const std::vector<PaddedBatch>& micro_batches, int64_t step,
                 double global_valid_frames, double lr, bool profile, bool stop_requested = false);

 private:
  VideoActionModel model_;
  AdamW* optimizer_;
  ProcessGroupHandle* group_;
  RunConfig config_;
  DatasetShape shape_;
  torch::Dtype dtype_;
  torch::Device device_;
  torch::Tensor empty_text_;     // [L, Dt], the dataset's empty prompt (text dropout)
  const ShardPlan* shard_plan_;  // null: replicated optimizer state
  ShardPlan gather_plan_;        // the all-gather's plan when the optimizer has split parameters
  double block_s_ = 0;          // the longest forward + backward of one block in the latest step, s
  int64_t block_sleep_us_ = 0;  // tests: StepperTestHooks::block_sleep_us, slept in every block

  // This rank's sums over the step's micro-steps, reduced across ranks in the update.
  struct StepSums {
    double video = 0, action = 0, tokens = 0, padded_tokens = 0, samples = 0, valid_frames = 0,
           padded_frames = 0;
  };
  // The micro-steps: forward, loss and backward of each, until a stop signal leaves them.
  // Returns where this rank left them ("": it ran them all).
  std::string MicroSteps(const std::vector<PaddedBatch>& micro_batches, int64_t step,
                         double global_frames, bool profile,
                         const std::shared_ptr<BlockWatch>& watch, StepSums& sums, StepStats& st);
  void MicroStep(const PaddedBatch& batch, int64_t step, double global_frames, bool profile,
                 StepSums& sums, StepStats& st);
  // After the vote: reduce, clip, update (unless not finite), and the step's figures.
  void Update(int64_t step, int64_t micro_steps, const StepSums& sums, double global_frames,
              double lr, StepStats& st);
  // After the micro-steps: reduce, clip, update. `sums` are this rank's step sums (float64).
  void ReduceReplicated(torch::Tensor& sums, StepStats& st);
  void ReduceSharded(torch::Tensor& sums, StepStats& st);
};

// The optimizer-state sharding of a run: null when every rank holds everything (shard none, or
// one rank). Owns the plan; `optimizer` keeps only this rank's moments.
std::unique_ptr<ShardPlan> ShardOptimizer(const RunConfig& config, int64_t rank, int64_t world,
                                          AdamW& optimizer);

// optim.master sharded in a bf16 run: every matmul weight and bias (the parameters of the
// model's Linear layers, which autocast would cast to bf16) becomes a bf16 compute copy, its
// float32 master kept only by its owner. Call after the resume filled the float32 weights and
// before the first step. Other runs are left as they are: in float32 and float64 the compute
// weights are the master's values, gathered after each update as optim.shard does.
// `widen_after_backward` (tests: BATON_TEST_WIDEN_AFTER_BACKWARD=1) is the control that widens
// every bf16 gradient after the backward instead of as it arrives.
void SplitComputeCopies(const RunConfig& config, torch::Dtype dtype, VideoActionModel& model,
                        AdamW& optimizer, bool widen_after_backward = false);

// Per optimizer parameter: whether it belongs to a Linear layer (what SplitComputeCopies splits).
std::vector<bool> MatmulParameters(VideoActionModel& model, const AdamW& optimizer);

// One micro-batch's forward and loss as training computes them, for the trainer and the packing
// check alike: inputs prepared in `dtype`, except bf16, which feeds float32 inputs to the float32
// master weights and computes under autocast. `mb` receives the prepared batch (its token
// counts); the caller runs backward.
LossSums ForwardLoss(VideoActionModel& model, const RunConfig& config, const PaddedBatch& batch,
                     int64_t step, const DatasetShape& shape, torch::Dtype dtype,
                     const torch::Device& device, const torch::Tensor& empty_text,
                     double global_frames, MicroBatch* mb);

}  // namespace baton
