#include "trainer/train/training_segment.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "schema/exit_codes.h"
#include "trainer/data/empty_text_tensor.h"
#include "trainer/data/episode_reader.h"
#include "trainer/distributed/failure_agreement.h"
#include "trainer/distributed/process_group.h"
#include "trainer/eval/inline_eval.h"
#include "trainer/fail.h"
#include "trainer/train/heartbeat.h"
#include "trainer/train/stop_signal.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

// The micro-batches of this rank, read and collated ahead on the loader thread.
std::unique_ptr<PrefetchLoader<PaddedBatch>> MakeLoader(const Setup& s, const ResumePoint& rp) {
  const int64_t total_micro = (s.config.run.steps - rp.step0()) * s.config.optim.grad_accum;
  auto index = s.index;
  auto plans = rp.plans;
  const int64_t rank = s.env.rank, micro0 = rp.micro0, pad_multiple = s.config.data.pad_multiple;
  return std::make_unique<PrefetchLoader<PaddedBatch>>(
      [index, plans, rank, micro0, pad_multiple](int64_t k) {
        std::vector<EpisodeData> eps;
        for (int64_t i : plans->Batch(rank, micro0 + k)) {
          eps.push_back(BATON_VALUE_OR_FAIL(ReadEpisode(*index, i),
                                            "regenerate or remove the episode named above"));
        }
        return PadCollate(eps, pad_multiple);
      },
      std::max<int64_t>(total_micro, 0), s.config.data.prefetch);
}

// Tests' faults inside the loop (heartbeat.h): a rank that dies at a step, a slow first step.
void TestFaultsAt(const HeartbeatTestHooks& hang_hooks, int64_t step, int64_t step0, int64_t rank) {
  if (step == hang_hooks.crash_at_step && rank == hang_hooks.crash_rank) {
    std::fprintf(stderr, "baton-train: BATON_TEST_CRASH_AT_STEP=%lld: killing this rank\n",
                 (long long)step);
    ::kill(::getpid(), SIGKILL);
  }
  if (step == step0) {
    Beat(HeartbeatPhase::kMicroStep, step, 0);
    SleepSeconds(hang_hooks.first_step_sleep_s);
  }
}

}  // namespace

TrainingSegment::TrainingSegment(const TrainOptions& options, const TrainerEnvironment& environment,
                                 SegmentLog& log)
    : options_(options), log_(log), s_(SetUp(options, environment, log)) {
  // Model and optimizer. Parameters are created from the seed, the same on every rank.
  const ResumeDecision start = DecideStart(options_, s_);
  std::string init_dir;
  const ModelDims dims = StartDims(options_, s_, start, &init_dir);
  empty_text_ = EmptyTextTensor(s_.config.objective.text_dropout, s_.index->dir, s_.shape);
  torch::manual_seed(uint64_t(s_.config.run.seed));
  model_ = VideoActionModel(dims);
  model_->to(s_.device, s_.dtype == torch::kBFloat16 ? torch::kFloat32 : s_.dtype);
  optimizer_ = std::make_unique<AdamW>(TrainableParameters(model_), s_.config.optim);
  // With optim.shard this rank keeps only the moments it owns (before a resume fills them).
  shard_plan_ = ShardOptimizer(s_.config, s_.env.rank, s_.env.world_size, *optimizer_);

  // Resume. Each rank reads its part of the checkpoint; one that fails makes every rank fail
  // alike.
  identity_ = RunIdentity(s_, dims);
  const std::string load_from = !start.checkpoint.empty() ? start.checkpoint : init_dir;
  const int64_t load_bytes = load_from.empty() ? 0 : FolderBytes(load_from);
  if (load_bytes > 0) Beat(HeartbeatPhase::kLoad, start.step0, 0, TransferBudgetS(load_bytes));
  RunAgreed(*s_.group, "while loading the checkpoint", [&] {
    rp_ = Resume(options_, s_, start, identity_, model_, *optimizer_, init_dir);
    return std::string();
  });
  HeartbeatTransferRate(load_bytes, rp_.load_seconds);
  // optim.master sharded, bf16: from here the masters live on their owners only.
  SplitComputeCopies(s_.config, s_.dtype, model_, *optimizer_, s_.environment.widen_after_backward);
  ReportSegmentStart(log_, s_, rp_, identity_);
  if (s_.leader()) {  // the log made it, unless --events points elsewhere; the first save would
    std::error_code ec;
    fs::create_directories(s_.run_dir, ec);
  }
}

TrainingSegment::~TrainingSegment() {
  if (episode_log_ != nullptr) std::fclose(episode_log_);
}

int TrainingSegment::Run() {
  const RunConfig& config = s_.config;
  // A stop signal that came while starting up: leave before the first step, with nothing new
  // to save. All ranks agree, or one would wait forever in the first step's reduction.
  if (s_.group->AnyRank(StopSignal() != 0) && rp_.step0() < config.run.steps) {
    return LeaveOnStop(StopPoint::kBeforeFirstStep, rp_.step0(), StopSignal(),
                       /*nothing_new=*/true);
  }
  // From here on the run folder must stay the one the segment started in; every rank that sees
  // it watches it (the leader made it above, before the agreement on the stop flag).
  folder_.Start(s_.run_dir);
  EvalResumedCheckpoint(log_, s_, model_, rp_.step0(), rp_.decision.checkpoint,
                        identity_.config_hash);

  // Step s consumes micro-batches [s * accum, (s + 1) * accum) of every rank's plan.
  loader_ = MakeLoader(s_, rp_);
  stepper_ = std::make_unique<TrainStepper>(model_, optimizer_.get(), s_.group.get(), config,
                                            s_.shape, s_.dtype, s_.device, empty_text_,
                                            shard_plan_.get(), s_.environment.stepper);
  reporter_ = std::make_unique<StepReporter>(StepReporter{log_, s_, rp_});
  if (!s_.environment.episode_log.empty()) {
    const std::string path = s_.environment.episode_log + "." + std::to_string(s_.env.rank);
    episode_log_ = std::fopen(path.c_str(), "a");
  }
  checkpointer_ = std::make_unique<Checkpointer>(*this);
  int64_t micro = rp_.micro0, nonfinite_run = 0;
  for (int64_t step = rp_.step0(); step < config.run.steps; ++step) {
    if (const std::optional<int> code = TrainStep(step, micro, nonfinite_run)) return *code;
  }
  if (s_.leader()) {
    EndSegment(log_, config.run.steps, SegmentEndReason::kCompleted, kExitOk);
    std::printf("done: %lld steps\n", (long long)config.run.steps);
  }
  return kExitOk;
}

std::vector<PaddedBatch> TrainingSegment::ReadStep(int64_t micro, double* global_frames) {
  std::vector<PaddedBatch> batches;
  *global_frames = 0;
  for (int64_t j = 0; j < s_.config.optim.grad_accum && StopSignal() == 0; ++j) {
    batches.push_back(*loader_->Next());
    for (int64_t r = 0; r < s_.env.world_size; ++r) {
      for (int64_t i : rp_.plans->Batch(r, micro + j))
        *global_frames += double(rp_.plans->lengths()[i]);
    }
  }
  return batches;
}

std::optional<int> TrainingSegment::TrainStep(int64_t step, int64_t& micro,
                                              int64_t& nonfinite_run) {
  const RunConfig& config = s_.config;
  const int64_t accum = config.optim.grad_accum;
  log_.SetStep(step);
  double global_frames = 0;
  const std::vector<PaddedBatch> batches = ReadStep(micro, &global_frames);
  // A changed run folder stops after the step; the save then fails on every rank. A stop
  // signal abandons the step instead (the stepper watches for it).
  const bool want_stop =
      !folder_.Changed().empty() ||
      (options_.hooks.stop_after > 0 && step + 1 - rp_.step0() >= options_.hooks.stop_after);
  const double lr = rp_.schedule.At(step);
  TestFaultsAt(s_.environment.heartbeat, step, rp_.step0(), s_.env.rank);
  const StepStats st = stepper_->Step(batches, step, global_frames, lr,
                                      reporter_->profiled < config.train.profile, want_stop);
  if (st.abandoned) return Abandon(*st.abandoned, step, micro);

  HeartbeatStepDone(st.seconds);
  LogEpisodes(step, batches);  // trained ones only: an abandoned step is re-done
  nonfinite_run = st.nonfinite ? nonfinite_run + 1 : 0;
  const std::vector<std::string> bad_ids =
      st.nonfinite ? StepEpisodeIds(*rp_.plans, *s_.index, micro, accum, s_.env.world_size)
                   : std::vector<std::string>{};
  micro += accum;
  reporter_->Report(step, st, lr, rp_.plans->Position(micro - 1).first, nonfinite_run, bad_ids);

  const int64_t done = step + 1;
  if (nonfinite_run >= config.train.max_nonfinite_steps) {
    return Diverge(done, nonfinite_run, bad_ids);
  }
  const bool stopping = st.stop && done < config.run.steps;
  checkpointer_->AfterStep(done, micro, lr, stopping);
  if (stopping) {
    return LeaveOnStop(StopPoint::kAfterStep, done, StopSignal(), /*nothing_new=*/false);
  }
  if (WantsInlineEval(config, done)) {
    checkpointer_->Finish(done);  // the eval follows the commit
    EvalInline(log_, s_, model_, done, identity_.config_hash);
  }
  return std::nullopt;
}

int TrainingSegment::Abandon(const StepAbandoned& abandoned, int64_t step, int64_t micro) {
  const bool on_disk = checkpointer_->StepStartOnDisk(step);
  ReportAbandoned(s_, abandoned);
  // The state of this step's start: `step` steps done, data position `micro`.
  if (!on_disk) checkpointer_->SaveAbandoned(step, micro);
  return LeaveOnStop(StopPoint::kAbandonedStep, step, abandoned.signal, on_disk);
}

int TrainingSegment::Diverge(int64_t steps_done, int64_t nonfinite_run,
                             const std::vector<std::string>& bad_ids) {
  // Every rank saw the same reduced loss and gradient norm, so all stop here together.
  const std::string why =
      std::to_string(nonfinite_run) +
      " consecutive steps with a NaN/Inf loss or gradient norm (train.max_nonfinite_steps " +
      std::to_string(s_.config.train.max_nonfinite_steps) + "), last at step " +
      std::to_string(steps_done) + " on episodes " + JoinIds(bad_ids, 16) +
      "; none was applied, the last checkpoint is finite";
  // A periodic save still in the background holds finite state: finish it, so no .partial is
  // left beside the run's checkpoints (every rank is here: the verdict is agreed).
  checkpointer_->Finish(steps_done);
  if (s_.leader()) {
    EndSegment(log_, steps_done, SegmentEndReason::kDiverged, kExitDiverged, why);
    std::fprintf(stderr,
                 "baton-train: training diverged: %s\n  hint: lower optim.lr or check those "
                 "episodes (baton-train data-check)\n",
                 why.c_str());
  }
  return kExitDiverged;
}

int TrainingSegment::LeaveOnStop(StopPoint where, int64_t steps_done, int signal,
                                 bool nothing_new) {
  if (!s_.leader()) return kExitRequeue;
  EndSegment(log_, steps_done, SegmentEndReason::kSignal, kExitRequeue);
  const char* how = nothing_new ? "nothing new to save" : "checkpointed";
  switch (where) {
    case StopPoint::kBeforeFirstStep:
      std::printf("stopping before step %lld on a stop request (%s): %s, exit %d\n",
                  (long long)steps_done + 1, StopSignalName(signal), how, kExitRequeue);
      break;
    case StopPoint::kAbandonedStep:
      std::printf("stopping at the start of step %lld on a stop request (%s): %s, exit %d\n",
                  (long long)steps_done + 1, StopSignalName(signal), how, kExitRequeue);
      break;
    case StopPoint::kAfterStep:
      std::printf("stopping after step %lld on a stop request (%s): %s, exit %d\n",
                  (long long)steps_done, StopSignalName(signal), how, kExitRequeue);
      break;
  }
  std::fflush(stdout);
  return kExitRequeue;
}

void TrainingSegment::LogEpisodes(int64_t step, const std::vector<PaddedBatch>& batches) {
  if (episode_log_ == nullptr) return;
  // Indices of data.path: the training index lacks the held-out episodes.
  const std::vector<int64_t>& to_data = s_.eval_set.train_to_data;
  for (const auto& b : batches) {
    std::fprintf(episode_log_, "%lld", (long long)step);
    for (int64_t e : b.episodes) std::fprintf(episode_log_, " %lld", (long long)to_data[size_t(e)]);
    std::fprintf(episode_log_, "\n");
  }
  std::fflush(episode_log_);
}

}  // namespace baton
