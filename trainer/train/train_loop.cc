#include "trainer/train/train_loop.h"

#include <c10/util/Exception.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "schema/exit_codes.h"
#include "trainer/ckpt/async_saver.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/empty_text.h"
#include "trainer/data/episode_reader.h"
#include "trainer/data/pad_collate.h"
#include "trainer/data/prefetch_loader.h"
#include "trainer/distributed/failure_agreement.h"
#include "trainer/distributed/process_group.h"
#include "trainer/eval/inline_eval.h"
#include "trainer/fail.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/heartbeat.h"
#include "trainer/train/resume_point.h"
#include "trainer/train/run_folder_watch.h"
#include "trainer/train/segment_log.h"
#include "trainer/train/segment_report.h"
#include "trainer/train/segment_save.h"
#include "trainer/train/segment_setup.h"
#include "trainer/train/step_abandon.h"
#include "trainer/train/stop_signal.h"
#include "trainer/train/train_step.h"

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

// Test audit trail (TrainTestHooks::episode_log): this rank's episodes per micro-step, as
// indices of data.path (`to_data`: from the training index, which lacks held-out episodes).
void LogEpisodes(std::FILE* f, int64_t step, const std::vector<PaddedBatch>& batches,
                 const std::vector<int64_t>& to_data) {
  if (f == nullptr) return;
  for (const auto& b : batches) {
    std::fprintf(f, "%lld", (long long)step);
    for (int64_t e : b.episodes) std::fprintf(f, " %lld", (long long)to_data[size_t(e)]);
    std::fprintf(f, "\n");
  }
  std::fflush(f);
}

// ---- The segment. -----------------------------------------------------------------------------

int TrainSegment(const TrainOptions& opt, SegmentLog& log) {
  // 1–3. Config, ranks, data.
  Setup s = SetUp(opt, log);
  const RunConfig& config = s.config;
  const int64_t accum = config.optim.grad_accum, world = s.env.world_size;

  // 4. Model and optimizer. Parameters are created from the seed, the same on every rank.
  const ResumeDecision start = DecideStart(opt, s);
  std::string init_dir;
  const ModelDims dims = StartDims(opt, s, start, &init_dir);
  torch::Tensor empty_text;
  if (config.objective.text_dropout > 0) {
    auto text = ReadEmptyText(s.index->dir, s.shape);
    if (!text.ok()) {
      FailAt(__FILE__, __LINE__, kExitData, text.status().ToString(),
             "objective.text_dropout " + std::to_string(config.objective.text_dropout) +
                 " needs the dataset's empty-prompt embedding");
    }
    empty_text =
        torch::from_blob(text->data(), {s.shape.text_len, s.shape.text_dim}, torch::kFloat32)
            .clone();
  }
  torch::manual_seed(uint64_t(config.run.seed));
  VideoActionModel model(dims);
  model->to(s.device, s.dtype == torch::kBFloat16 ? torch::kFloat32 : s.dtype);
  AdamW optimizer(TrainableParameters(model), config.optim);
  // With optim.shard this rank keeps only the moments it owns (before a resume fills them).
  const std::unique_ptr<ShardPlan> shard_plan =
      ShardOptimizer(config, s.env.rank, s.env.world_size, optimizer);

  // 5. Resume.
  const TrainerState identity = RunIdentity(s, dims);
  // Each rank reads its part of the checkpoint; one that fails makes every rank fail alike.
  ResumePoint rp;
  const std::string load_from = !start.checkpoint.empty() ? start.checkpoint : init_dir;
  const int64_t load_bytes = load_from.empty() ? 0 : FolderBytes(load_from);
  if (load_bytes > 0) Beat(HeartbeatPhase::kLoad, start.step0, 0, TransferBudgetS(load_bytes));
  RunAgreed(*s.group, "while loading the checkpoint", [&] {
    rp = Resume(opt, s, start, identity, model, optimizer, init_dir);
    return std::string();
  });
  HeartbeatTransferRate(load_bytes, rp.load_seconds);
  // optim.master sharded, bf16: from here the masters live on their owners only.
  SplitComputeCopies(config, s.dtype, model, optimizer);
  ReportSegmentStart(log, s, rp, identity);
  if (s.leader()) {  // the log made it, unless --events points elsewhere; the first save would
    std::error_code ec;
    fs::create_directories(s.run_dir, ec);
  }
  // A stop signal that came while starting up: leave before the first step, with nothing new
  // to save. All ranks agree, or one would wait forever in the first step's reduction.
  if (s.group->AnyRank(StopSignal() != 0) && rp.step0() < config.run.steps) {
    if (s.leader()) {
      EndSegment(log, rp.step0(), SegmentEndReason::kSignal, kExitRequeue);
      std::printf(
          "stopping before step %lld on a stop request (%s): nothing new to save, exit %d\n",
          (long long)rp.step0() + 1, StopSignalName(StopSignal()), kExitRequeue);
    }
    return kExitRequeue;
  }
  // From here on the run folder must stay the one the segment started in; every rank that sees
  // it watches it (the leader made it above, before the agreement on the stop flag).
  RunFolderWatch folder;
  folder.Start(s.run_dir);

  EvalResumedCheckpoint(log, s, model, rp.step0(), rp.decision.checkpoint, identity.config_hash);

  // 6. Loop. Step s consumes micro-batches [s * accum, (s + 1) * accum) of every rank's plan.
  auto loader = MakeLoader(s, rp);
  TrainStepper stepper(model, &optimizer, s.group.get(), config, s.shape, s.dtype, s.device,
                       empty_text, shard_plan.get());
  StepReporter reporter{log, s, rp};
  std::FILE* episode_log =
      opt.hooks.episode_log.empty()
          ? nullptr
          : std::fopen((opt.hooks.episode_log + "." + std::to_string(s.env.rank)).c_str(), "a");
  AsyncSaver saver;  // checkpoint.async: the periodic save being written in the background
  auto save = [&](int64_t done, int64_t micro, double lr, SaveReason why) {
    // Never into a run folder that is gone or replaced (the save would recreate checkpoints/
    // where nobody looks): every rank stops with the same error.
    const std::string changed = folder.Changed();
    if (s.group->AnyRank(!changed.empty())) {
      log.OnlyOpenFile();
      BATON_FAIL(kExitData,
                 (changed.empty() ? "another rank found that " + s.run_dir + " changed" : changed) +
                     "; stopping before the save of step " + std::to_string(done),
                 "the run's checkpoints and events lived there; restore the folder and resume, "
                 "or start the run again");
    }
    Save(log, s, opt.hooks, model, optimizer, shard_plan.get(), identity, rp, done, micro, lr, why,
         saver);
  };
  int64_t micro = rp.micro0, nonfinite_run = 0;
  for (int64_t step = rp.step0(); step < config.run.steps; ++step) {
    log.SetStep(step);
    std::vector<PaddedBatch> batches;
    double global_frames = 0;  // of the whole step, all ranks: known from the plan alone
    // With a stop signal already here the step is abandoned at its start: no data to wait for.
    for (int64_t j = 0; j < accum && StopSignal() == 0; ++j) {
      batches.push_back(*loader->Next());
      for (int64_t r = 0; r < world; ++r) {
        for (int64_t i : rp.plans->Batch(r, micro + j))
          global_frames += double(rp.plans->lengths()[i]);
      }
    }
    // A changed run folder stops after the step; the save then fails on every rank. A stop
    // signal abandons the step instead (the stepper watches for it).
    const bool want_stop =
        !folder.Changed().empty() ||
        (opt.hooks.stop_after > 0 && step + 1 - rp.step0() >= opt.hooks.stop_after);
    const double lr = rp.schedule.At(step);
    const HeartbeatTestHooks& hang_hooks = TestHooksFromEnv();
    if (step == hang_hooks.crash_at_step && s.env.rank == hang_hooks.crash_rank) {
      std::fprintf(stderr, "baton-train: BATON_TEST_CRASH_AT_STEP=%lld: killing this rank\n",
                   (long long)step);
      ::kill(::getpid(), SIGKILL);
    }
    if (step == rp.step0()) {
      Beat(HeartbeatPhase::kMicroStep, step, 0);
      SleepSeconds(hang_hooks.first_step_sleep_s);
    }
    StepStats st;
    try {
      st = stepper.Step(batches, step, global_frames, lr, reporter.profiled < config.train.profile,
                        want_stop);
    } catch (const StepAbandoned& a) {
      // The state of this step's start is on disk when the segment began there, or when the
      // periodic save of it committed. That save may still be in the background: it is then
      // finished and is the stop's checkpoint (abandoned, the same state would be written again).
      bool saved = step == rp.step0();
      if (!saved && step % config.checkpoint.every == 0) {
        saved = !(saver.in_flight() && saver.step() == step) ||
                SettleBackgroundSave(log, s, saver, step, SaveReason::kSignal, /*next_bytes=*/0);
      }
      return StopAbandoned(
          log, s, a,
          [&] {
            // The state of this step's start: `step` steps done, data position `micro`.
            save(step, micro, rp.schedule.At(step - 1), SaveReason::kSignal);
          },
          saved);
    }
    HeartbeatStepDone(st.seconds);
    LogEpisodes(episode_log, step, batches,
                s.eval_set.train_to_data);  // trained ones only: an abandoned step is re-done
    nonfinite_run = st.nonfinite ? nonfinite_run + 1 : 0;
    const std::vector<std::string> bad_ids =
        st.nonfinite ? StepEpisodeIds(*rp.plans, *s.index, micro, accum, world)
                     : std::vector<std::string>{};
    micro += accum;
    reporter.Report(step, st, lr, rp.plans->Position(micro - 1).first, nonfinite_run, bad_ids);

    const int64_t done = step + 1;
    if (nonfinite_run >= config.train.max_nonfinite_steps) {
      // Every rank saw the same reduced loss and gradient norm, so all stop here together.
      const std::string why =
          std::to_string(nonfinite_run) +
          " consecutive steps with a NaN/Inf loss or gradient norm (train.max_nonfinite_steps " +
          std::to_string(config.train.max_nonfinite_steps) + "), last at step " +
          std::to_string(done) + " on episodes " + JoinIds(bad_ids, 16) +
          "; none was applied, the last checkpoint is finite";
      // A periodic save still in the background holds finite state: finish it, so no .partial
      // is left beside the run's checkpoints (every rank is here: the verdict is agreed).
      CommitBackgroundSave(log, s, saver, done, /*wait=*/true);
      if (s.leader()) {
        EndSegment(log, done, SegmentEndReason::kDiverged, kExitDiverged, why);
        std::fprintf(
            stderr,
            "baton-train: training diverged: %s\n  hint: lower optim.lr or check those episodes "
            "(baton-train data-check)\n",
            why.c_str());
      }
      return kExitDiverged;
    }
    if (st.stop && done < config.run.steps) {
      save(done, micro, lr, SaveReason::kSignal);
      if (s.leader()) {
        EndSegment(log, done, SegmentEndReason::kSignal, kExitRequeue);
        std::printf("stopping after step %lld on a stop request (%s): checkpointed, exit %d\n",
                    (long long)done, StopSignalName(StopSignal()), kExitRequeue);
      }
      return kExitRequeue;
    }
    if (done == config.run.steps) {
      save(done, micro, lr, SaveReason::kFinal);
    } else if (done % config.checkpoint.every == 0) {
      save(done, micro, lr, SaveReason::kPeriodic);
    } else {
      CommitBackgroundSave(log, s, saver, done, /*wait=*/false);
    }
    if (WantsInlineEval(config, done)) {
      CommitBackgroundSave(log, s, saver, done, /*wait=*/true);  // the eval follows the commit
      EvalInline(log, s, model, done, identity.config_hash);
    }
  }

  // 7. Shutdown.
  if (s.leader()) {
    EndSegment(log, config.run.steps, SegmentEndReason::kCompleted, kExitOk);
    std::printf("done: %lld steps\n", (long long)config.run.steps);
  }
  return kExitOk;
}

}  // namespace

int Train(const TrainOptions& opt) {
  InstallStopSignalHandlers();
  SegmentLog log;
  log.SetPath(opt.events_path, opt.run_dir, EnvOr("SLURM_JOB_ID", "local"),
              std::atoll(EnvOr("SLURM_RESTART_COUNT", "0")));
  // Every way out of a segment leaves a segment_end record saying why (docs/events.md).
  try {
    return TrainSegment(opt, log);
  } catch (const FatalError& e) {
    log.WriteError(e.exit_code(), e.what());
    throw;
  } catch (const c10::Error& e) {
    log.WriteError(kExitInternal,
                   std::string("internal error in libtorch: ") + e.what_without_backtrace());
    throw;
  } catch (const std::exception& e) {
    log.WriteError(kExitInternal, std::string("internal error: ") + e.what());
    throw;
  }
}

}  // namespace baton
