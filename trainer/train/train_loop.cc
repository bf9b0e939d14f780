#include "trainer/train/train_loop.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "schema/checkpoint_manifest.h"
#include "schema/events.h"
#include "schema/exit_codes.h"
#include "schema/run_config.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/data/data_plan.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/episode_reader.h"
#include "trainer/data/length_bucket_sampler.h"
#include "trainer/data/pad_collate.h"
#include "trainer/data/prefetch_loader.h"
#include "trainer/dist/process_group.h"
#include "trainer/fail.h"
#include "trainer/optim/adamw.h"
#include "trainer/optim/lr_schedule.h"
#include "trainer/train/stop_signal.h"
#include "trainer/train/train_step.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

DatasetShape ResolveShape(const DatasetIndex& index) {
  if (index.shape) return *index.shape;
  auto first = ReadEpisode(index, 0);
  if (!first.ok()) FailAt(__FILE__, __LINE__, first.status(), "fix or remove the episode named above");
  return first->shape;
}

std::string FormatDuration(double s) {
  char buf[32];
  const int64_t t = int64_t(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)t / 3600, (long long)(t % 3600) / 60);
  else std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)t / 60, (long long)t % 60);
  return buf;
}

const char* EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : fallback;
}

struct ResumeDecision {
  std::string mode = "fresh";  // fresh | exact | weights_only
  std::string checkpoint;      // folder, empty when fresh
  std::vector<std::string> skipped;  // invalid checkpoints passed over, with the reason
};

ResumeDecision DecideResume(const TrainOptions& o, const std::string& run_dir) {
  ResumeDecision d;
  if (o.resume == "none") return d;
  if (o.resume == "auto") {
    for (const auto& c : ListCheckpoints((fs::path(run_dir) / "checkpoints").string())) {
      if (!c.valid) {
        d.skipped.push_back(c.problem);
        continue;
      }
      d.checkpoint = c.path;
      break;
    }
    if (d.checkpoint.empty()) return d;
  } else {
    d.checkpoint = o.resume;
    std::error_code ec;
    if (!fs::is_directory(d.checkpoint, ec)) {
      BATON_FAIL(kExitConfig, "--resume " + o.resume + ": no such checkpoint folder",
                 "pass auto, none, or a checkpoint_step_<N> folder");
    }
  }
  auto manifest = ReadManifest(d.checkpoint);
  const bool full = manifest.ok() && manifest->kind == "full";
  d.mode = (full && o.resume_mode != "weights_only") ? "exact" : "weights_only";
  return d;
}

}  // namespace

int Train(const TrainOptions& opt) {
  InstallStopSignalHandlers();
  using Clock = std::chrono::steady_clock;

  // 1. Config.
  RunConfig config = BATON_VALUE_OR_FAIL(LoadRunConfig(opt.config_path),
                                         "fix the config (baton validate shows every problem)");
  const std::string run_dir = !opt.run_dir.empty() ? opt.run_dir : config.run.dir;
  if (run_dir.empty()) {
    BATON_FAIL(kExitConfig, opt.config_path + ": run.dir is empty and no --run-dir was given",
               "set run.dir or pass --run-dir");
  }
  const torch::Dtype dtype = config.train.dtype == DType::kFloat64 ? torch::kFloat64
                             : config.train.dtype == DType::kBFloat16 ? torch::kBFloat16
                                                                      : torch::kFloat32;
  const bool cuda = config.train.device == "cuda";
  torch::Device device(cuda ? torch::kCUDA : torch::kCPU);

  // 2. Ranks, and the CPU threads each may use (libtorch defaults to 1 here).
  const DistEnv env = DistEnvFromEnvironment();
  torch::set_num_threads(CpuThreadsPerRank(env));
  auto group = ProcessGroupHandle::Create(env, cuda);
  const bool leader = env.rank == 0;

  // 3. Data.
  auto loaded = LoadDatasetIndex(config.data.path);
  if (!loaded.ok()) {
    FailAt(__FILE__, __LINE__, kExitData, loaded.status().ToString(), "check data.path in " + opt.config_path);
  }
  auto index = std::make_shared<const DatasetIndex>(std::move(loaded).value());
  const DatasetShape shape = ResolveShape(*index);
  if (shape.height % config.model.patch_size != 0 || shape.width % config.model.patch_size != 0) {
    BATON_FAIL(kExitConfig, "model.patch_size " + std::to_string(config.model.patch_size) +
                                " does not divide the latent size " + std::to_string(shape.height) + "x" +
                                std::to_string(shape.width) + " of " + config.data.path,
               "choose a patch size that divides H and W");
  }
  SamplerOptions so;
  so.batch_size = config.data.batch_size;
  so.world_size = env.world_size;
  so.rank = env.rank;
  so.pool_factor = config.data.pool_factor;
  so.seed = uint64_t(config.run.seed);
  so.plan = config.data.plan;
  auto plans = std::make_shared<DataPlan>(index->BucketKeys(), so);
  const int64_t accum = config.optim.grad_accum;

  // 4. Model and optimizer. Parameters are created from the seed, the same on every rank.
  const ModelDims dims = MakeModelDims(config, shape);
  torch::manual_seed(uint64_t(config.run.seed));
  VideoActionModel model(dims);
  model->to(device, dtype == torch::kBFloat16 ? torch::kFloat32 : dtype);
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : model->named_parameters()) named.push_back({p.key(), p.value()});
  AdamW optimizer(named, config.optim);

  // 5. Resume.
  const ResumeDecision decision = DecideResume(opt, run_dir);
  int64_t step0 = 0, micro0 = 0;
  int64_t resume_warmup = 0;
  double load_seconds = 0;
  if (decision.mode != "fresh") {
    const LoadMode mode = decision.mode == "exact" ? LoadMode::kFull : LoadMode::kWeightsOnly;
    const auto load_t0 = Clock::now();
    TrainerState st = LoadCheckpoint(decision.checkpoint, model, &optimizer, mode);
    load_seconds = std::chrono::duration<double>(Clock::now() - load_t0).count();
    step0 = st.step;
    if (mode == LoadMode::kFull) {
      if (st.batch_size != config.data.batch_size || st.grad_accum != accum) {
        BATON_FAIL(kExitConfig,
                   decision.checkpoint + " was trained with batch " + std::to_string(st.batch_size) +
                       " x accum " + std::to_string(st.grad_accum) + ", the config has " +
                       std::to_string(config.data.batch_size) + " x " + std::to_string(accum),
                   "an exact resume needs the same data.batch_size and optim.grad_accum");
      }
      SamplerOptions old_so = so;
      old_so.world_size = st.world_size;
      DataPlan old_plan(index->BucketKeys(), old_so, st.origin_epoch, st.transition);
      if (st.world_size != env.world_size) {
        // Keep the global data position: deal the rest of the current epoch to the new ranks.
        int64_t repeated = 0;
        const auto [epoch, batch] = old_plan.Position(st.micro_index);
        plans = std::make_shared<DataPlan>(old_plan.Reshard(st.micro_index, env.world_size, &repeated));
        if (leader) {
          std::printf("resharding data from %lld to %lld ranks at epoch %lld, batch %lld: %lld batches "
                      "per rank left in the epoch (%lld padding batches)\n",
                      (long long)st.world_size, (long long)env.world_size, (long long)epoch,
                      (long long)batch,
                      (long long)(plans->transition().empty() ? 0 : plans->transition().batches[0].size()),
                      (long long)repeated);
        }
        st.micro_index = 0;
      } else {
        plans = std::make_shared<DataPlan>(old_plan);
      }
      micro0 = st.micro_index;
    } else {
      resume_warmup = opt.resume_warmup >= 0 ? opt.resume_warmup : config.optim.resume_warmup_steps;
      micro0 = step0 * accum;  // a weights-only folder has no data position: assume step-aligned
    }
  }
  if (!opt.expect_mode.empty() && opt.expect_mode != decision.mode) {
    BATON_FAIL(kExitConfig, "the launcher decided mode " + opt.expect_mode + " but " +
                                (decision.checkpoint.empty() ? std::string("there is no checkpoint")
                                                             : decision.checkpoint + " means " + decision.mode),
               "the run directory changed under the launcher; requeue to decide again");
  }
  if (opt.expect_step0 >= 0 && opt.expect_step0 != step0) {
    BATON_FAIL(kExitConfig, "the launcher decided step0 " + std::to_string(opt.expect_step0) +
                                " but the checkpoint holds step " + std::to_string(step0),
               "the run directory changed under the launcher; requeue to decide again");
  }
  LrSchedule schedule{config.optim.lr, config.optim.warmup_steps, step0, resume_warmup};

  EventWriter events;
  const std::string job = EnvOr("SLURM_JOB_ID", "local");
  const int64_t restart = std::atoll(EnvOr("SLURM_RESTART_COUNT", "0"));
  if (leader) {
    const std::string path = !opt.events_path.empty()
        ? opt.events_path
        : (fs::path(run_dir) / "events" / EventsFileName(job, restart)).string();
    BATON_CHECK_OK(events.Open(path, "trainer"), "check that the run directory is writable");
    for (const auto& why : decision.skipped) std::fprintf(stderr, "resume: skipping %s\n", why.c_str());
    BATON_CHECK_OK(events.Write(event_type::kSegmentStart,
                                {{"mode", decision.mode},
                                 {"step0", step0},
                                 {"target_steps", config.run.steps},
                                 {"resume_warmup_steps", resume_warmup},
                                 {"warmup_until", schedule.WarmupUntil()},
                                 {"checkpoint", decision.checkpoint.empty() ? nlohmann::json(nullptr)
                                                                            : nlohmann::json(decision.checkpoint)},
                                 {"skipped", decision.skipped},
                                 {"world_size", env.world_size},
                                 {"load_seconds", load_seconds},
                                 {"config_hash", ConfigHash(dims)},
                                 {"job_id", job},
                                 {"restart_count", restart}},
                                /*sync=*/true),
                   "");
    // Step numbers in messages are 1-based like the progress line (events keep 0-based indices).
    std::printf("segment start: mode %s, step0 %lld, target %lld, resume warmup %lld (full LR from step %lld), "
                "%lld rank(s), checkpoint %s\n",
                decision.mode.c_str(), (long long)step0, (long long)config.run.steps,
                (long long)resume_warmup, (long long)schedule.WarmupUntil() + 1, (long long)env.world_size,
                decision.checkpoint.empty() ? "none" : decision.checkpoint.c_str());
    std::fflush(stdout);
  }

  auto save = [&](int64_t steps_done, int64_t micro_done, double last_lr, const char* reason) {
    if (leader) {
      TrainerState st;
      st.step = steps_done;
      st.micro_index = micro_done;
      std::tie(st.epoch, st.batch) = plans->Position(micro_done);
      st.origin_epoch = plans->origin_epoch();
      st.transition = plans->transition();
      st.world_size = env.world_size;
      st.batch_size = config.data.batch_size;
      st.grad_accum = accum;
      st.plan = SamplerPlanName(config.data.plan);
      st.seed = config.run.seed;
      st.base_lr = schedule.base_lr;
      st.warmup_steps = schedule.warmup_steps;
      st.lr_step0 = schedule.step0;
      st.resume_warmup = schedule.resume_warmup;
      st.last_lr = last_lr;
      st.config_hash = ConfigHash(dims);
      st.dtype = DTypeName(config.train.dtype);
      SaveHooks hooks;
      if (!opt.fault.empty() && (opt.fault_at_step < 0 || opt.fault_at_step == steps_done)) {
        auto die = [] { ::kill(::getpid(), SIGKILL); };
        if (opt.fault == "mid_file") hooks.mid_file = die;
        if (opt.fault == "before_manifest") hooks.before_manifest = die;
        if (opt.fault == "before_rename") hooks.before_rename = die;
        if (opt.fault == "slow_save" && std::string(reason) == "signal") {
          // A long stop save, to land a second SIGTERM inside it.
          hooks.before_manifest = [] { ::usleep(3000 * 1000); };
        }
      }
      SetSaving(true);
      const SaveResult r = SaveCheckpoint((fs::path(run_dir) / "checkpoints").string(), model,
                                          optimizer, st, config.checkpoint, hooks);
      SetSaving(false);
      BATON_CHECK_OK(events.Write(event_type::kCheckpoint,
                                  {{"step", steps_done}, {"path", r.path}, {"bytes", r.bytes},
                                   {"seconds", r.seconds}, {"reason", reason}},
                                  /*sync=*/true),
                     "");
      std::printf("checkpoint %s: %.1f MB in %.2f s (%s)\n", r.path.c_str(), r.bytes / 1e6, r.seconds, reason);
      std::fflush(stdout);
    }
    group->Barrier();  // no rank leaves (and gets its job step torn down) before the save is whole
  };

  // 6. Loop. Step s consumes micro-batches [s * accum, (s + 1) * accum) of every rank's plan.
  const int64_t total_micro = (config.run.steps - step0) * accum;
  const int64_t rank = env.rank, world = env.world_size, pad_multiple = config.data.pad_multiple;
  PrefetchLoader<PaddedBatch> loader(
      [index, plans, rank, micro0, pad_multiple](int64_t k) {
        std::vector<EpisodeData> eps;
        for (int64_t i : plans->Batch(rank, micro0 + k)) {
          eps.push_back(BATON_VALUE_OR_FAIL(ReadEpisode(*index, i),
                                            "regenerate or remove the episode named above"));
        }
        return PadCollate(eps, pad_multiple);
      },
      std::max<int64_t>(total_micro, 0), config.data.prefetch);
  TrainStepper stepper(model, &optimizer, group.get(), config, shape, dtype, device);
  // Audit trail for tests and debugging: every rank's episodes per step, one line each.
  std::FILE* episode_log = nullptr;
  if (const char* path = std::getenv("BATON_EPISODE_LOG")) {
    episode_log = std::fopen((std::string(path) + "." + std::to_string(rank)).c_str(), "a");
  }
  int64_t profiled = 0;
  const auto seg_t0 = Clock::now();
  double last_lr = 0;
  int64_t micro = micro0;
  for (int64_t step = step0; step < config.run.steps; ++step) {
    std::vector<PaddedBatch> batches;
    double global_frames = 0;
    for (int64_t j = 0; j < accum; ++j) {
      batches.push_back(*loader.Next());
      for (int64_t r = 0; r < world; ++r) {
        for (int64_t i : plans->Batch(r, micro + j)) global_frames += double(plans->lengths()[i]);
      }
    }
    if (episode_log != nullptr) {
      for (const auto& b : batches) {
        std::fprintf(episode_log, "%lld", (long long)step);
        for (int64_t e : b.episodes) std::fprintf(episode_log, " %lld", (long long)e);
        std::fprintf(episode_log, "\n");
      }
      std::fflush(episode_log);
    }
    micro += accum;
    const bool profile = profiled < config.train.profile;
    const bool want_stop = StopSignal() != 0 || (opt.stop_after > 0 && step + 1 - step0 >= opt.stop_after);
    last_lr = schedule.At(step);
    const StepStats st = stepper.Step(batches, step, global_frames, last_lr, profile, want_stop);

    if (leader) {
      const double tok_s = st.seconds > 0 ? double(st.tokens) / st.seconds : 0.0;
      const double pad = st.padded_frames > 0 ? 1.0 - double(st.valid_frames) / double(st.padded_frames) : 0.0;
      BATON_CHECK_OK(events.Write(event_type::kStep,
                                  {{"step", step}, {"lr", last_lr}, {"loss", st.loss},
                                   {"loss_video", st.loss_video}, {"loss_action", st.loss_action},
                                   {"grad_norm", st.grad_norm}, {"tokens", st.tokens},
                                   {"padded_tokens", st.padded_tokens}, {"samples", st.samples},
                                   {"valid_frames", st.valid_frames}, {"padded_frames", st.padded_frames},
                                   {"step_time_s", st.seconds}, {"tokens_per_s", tok_s},
                                   {"in_warmup", schedule.InWarmup(step)},
                                   {"epoch", plans->Position(micro - 1).first}}),
                     "");
      for (const auto& p : st.micro) {
        BATON_CHECK_OK(events.Write(event_type::kMicrostep,
                                    {{"step", step}, {"micro", profiled}, {"tokens", p.tokens},
                                     {"fwd_bwd_s", p.fwd_bwd_s}, {"peak_bytes", p.peak_bytes}}),
                       "");
        std::printf("profile micro %lld: %lld tokens, fwd+bwd %.3f s, peak %.1f MB\n", (long long)profiled,
                    (long long)p.tokens, p.fwd_bwd_s, p.peak_bytes / 1e6);
        ++profiled;
      }
      if ((step + 1) % config.train.log_every == 0 || step + 1 == config.run.steps || st.stop) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - seg_t0).count();
        const double eta = elapsed / double(step + 1 - step0) * double(config.run.steps - step - 1);
        std::printf("step %lld/%lld | loss %.4f (video %.4f, action %.4f) | lr %.3e | grad %.3f | "
                    "%.0f tok/s | pad %.1f%% | ETA %s\n",
                    (long long)(step + 1), (long long)config.run.steps, st.loss, st.loss_video,
                    st.loss_action, last_lr, st.grad_norm, tok_s, 100 * pad, FormatDuration(eta).c_str());
        std::fflush(stdout);
      }
    } else {
      profiled += int64_t(st.micro.size());
    }

    const int64_t done = step + 1;
    if (st.stop && done < config.run.steps) {
      save(done, micro, last_lr, "signal");
      if (leader) {
        BATON_CHECK_OK(events.Write(event_type::kSegmentEnd,
                                    {{"step", done}, {"reason", "signal"},
                                     {"signal", StopSignalName(StopSignal())}, {"exit_code", kExitRequeue}},
                                    true),
                       "");
        std::printf("stopping after step %lld on a stop request (%s): checkpointed, exit %d\n",
                    (long long)done, StopSignalName(StopSignal()), kExitRequeue);
      }
      return kExitRequeue;
    }
    if (done == config.run.steps) {
      save(done, micro, last_lr, "final");
    } else if (done % config.checkpoint.every == 0) {
      save(done, micro, last_lr, "periodic");
    }
  }

  // 7. Shutdown.
  if (leader) {
    BATON_CHECK_OK(events.Write(event_type::kSegmentEnd,
                                {{"step", config.run.steps}, {"reason", "completed"},
                                 {"signal", nullptr}, {"exit_code", kExitOk}},
                                true),
                   "");
    std::printf("done: %lld steps\n", (long long)config.run.steps);
  }
  return kExitOk;
}

}  // namespace baton
