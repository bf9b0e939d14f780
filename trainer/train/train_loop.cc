#include "trainer/train/train_loop.h"

#include <c10/util/Exception.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>

#include "schema/checkpoint_manifest.h"
#include "schema/events.h"
#include "schema/exit_codes.h"
#include "schema/run_config.h"
#include "trainer/build_options.h"
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
#include "trainer/train/segment_log.h"
#include "trainer/train/stop_signal.h"
#include "trainer/train/train_step.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

DatasetShape ResolveShape(const DatasetIndex& index) {
  if (index.shape) return *index.shape;
  auto first = ReadEpisode(index, 0);
  if (!first.ok())
    FailAt(__FILE__, __LINE__, first.status(), "fix or remove the episode named above");
  return first->shape;
}

std::string FormatDuration(double s) {
  char buf[32];
  const int64_t t = int64_t(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)t / 3600, (long long)(t % 3600) / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)t / 60, (long long)t % 60);
  return buf;
}

const char* EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : fallback;
}

struct ResumeDecision {
  std::string mode = "fresh";        // fresh | exact | weights_only
  std::string checkpoint;            // folder, empty when fresh
  std::vector<std::string> skipped;  // invalid checkpoints passed over, with the reason
};

// --resume none into a folder that already holds a run's checkpoints would interleave two runs'
// checkpoints, and the next --resume auto would continue the wrong one: refuse, or with
// --start-over move them aside (nothing is deleted).
void ClearForFreshStart(const TrainOptions& o, const std::string& run_dir, bool leader) {
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  int64_t valid = 0, newest = -1;
  for (const auto& c : ListCheckpoints(dir.string(), /*check_hashes=*/false)) {
    if (!c.valid) continue;
    ++valid;
    newest = std::max(newest, c.step);
  }
  if (valid == 0) return;
  if (!o.start_over) {
    BATON_FAIL(
        kExitConfig,
        "--resume none: " + dir.string() + " holds " + std::to_string(valid) +
            " valid checkpoint(s) of a run (newest: step " + std::to_string(newest) + ")",
        "use --resume auto to continue it, another run folder, or --start-over to move them aside");
  }
  if (!leader) return;
  const fs::path aside = dir.string() + ".replaced-" + std::to_string(int64_t(std::time(nullptr)));
  std::error_code ec;
  fs::rename(dir, aside, ec);
  if (ec)
    BATON_FAIL(kExitIo, dir.string() + ": cannot move aside: " + ec.message(), "check permissions");
  std::printf("start over: moved %lld checkpoint(s) to %s\n", (long long)valid,
              aside.string().c_str());
}

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

// What the run is, independent of how far it got: the fields an exact resume must find equal.
TrainerState RunIdentity(const RunConfig& config, const DatasetIndex& index, const ModelDims& dims,
                         int64_t world_size) {
  TrainerState st;
  st.world_size = world_size;
  st.batch_size = config.data.batch_size;
  st.grad_accum = config.optim.grad_accum;
  st.plan = SamplerPlanName(config.data.plan);
  st.seed = config.run.seed;
  st.config_hash = ConfigHash(dims);
  st.dtype = DTypeName(config.train.dtype);
  st.pad_multiple = config.data.pad_multiple;
  st.data_path = index.dir;
  st.dataset_fingerprint = index.fingerprint;
  return st;
}

// Where this segment starts: the checkpoint's weights, AdamW state, data position and LR.
struct ResumePoint {
  ResumeDecision decision;
  int64_t step0 = 0, micro0 = 0, resume_warmup = 0;
  double load_seconds = 0;
  std::shared_ptr<DataPlan> plans;
};

ResumePoint Resume(const TrainOptions& opt, const std::string& run_dir, const RunConfig& config,
                   const TrainerState& identity, const SamplerOptions& so,
                   const DatasetIndex& index, VideoActionModel& model, AdamW& optimizer,
                   bool leader) {
  ResumePoint r;
  if (opt.resume == "none") ClearForFreshStart(opt, run_dir, leader);
  r.decision = DecideResume(opt, run_dir);
  r.plans = std::make_shared<DataPlan>(index.BucketKeys(), so);
  const int64_t accum = config.optim.grad_accum;
  if (r.decision.mode != "fresh") {
    const LoadMode mode = r.decision.mode == "exact" ? LoadMode::kFull : LoadMode::kWeightsOnly;
    const auto load_t0 = Clock::now();
    TrainerState st = LoadCheckpoint(r.decision.checkpoint, model, &optimizer, mode);
    r.load_seconds = std::chrono::duration<double>(Clock::now() - load_t0).count();
    r.step0 = st.step;
    if (mode == LoadMode::kFull) {
      const auto diff = ExactResumeDifferences(st, identity);
      if (!diff.empty()) {
        std::string lines;
        for (const auto& d : diff) lines += "\n    " + d;
        BATON_FAIL(
            kExitConfig,
            r.decision.checkpoint +
                " belongs to another run; an exact resume needs these equal:" + lines,
            "restore the run's config and data, resume weights only (--resume-mode weights_only), "
            "or start a new run folder");
      }
      SamplerOptions old_so = so;
      old_so.world_size = st.world_size;
      DataPlan old_plan(index.BucketKeys(), old_so, st.origin_epoch, st.transition);
      if (st.world_size != identity.world_size) {
        // Keep the global data position: deal the rest of the current epoch to the new ranks.
        int64_t repeated = 0;
        const auto [epoch, batch] = old_plan.Position(st.micro_index);
        r.plans = std::make_shared<DataPlan>(
            old_plan.Reshard(st.micro_index, identity.world_size, &repeated));
        if (leader) {
          std::printf(
              "resharding data from %lld to %lld ranks at epoch %lld, batch %lld: %lld batches "
              "per rank left in the epoch (%lld padding batches)\n",
              (long long)st.world_size, (long long)identity.world_size, (long long)epoch,
              (long long)batch,
              (long long)(r.plans->transition().empty() ? 0
                                                        : r.plans->transition().batches[0].size()),
              (long long)repeated);
        }
        st.micro_index = 0;
      } else {
        r.plans = std::make_shared<DataPlan>(old_plan);
      }
      r.micro0 = st.micro_index;
    } else {
      r.resume_warmup =
          opt.resume_warmup >= 0 ? opt.resume_warmup : config.optim.resume_warmup_steps;
      r.micro0 =
          r.step0 * accum;  // a weights-only folder has no data position: assume step-aligned
    }
  }
  if (r.step0 > config.run.steps) {
    BATON_FAIL(kExitConfig,
               "run.steps " + std::to_string(config.run.steps) + " is below the step of " +
                   r.decision.checkpoint + " (" + std::to_string(r.step0) + ")",
               "raise run.steps to continue training, or resume from an earlier checkpoint");
  }
  if (!opt.expect_mode.empty() && opt.expect_mode != r.decision.mode) {
    BATON_FAIL(
        kExitConfig,
        "the launcher decided mode " + opt.expect_mode + " but " +
            (r.decision.checkpoint.empty() ? std::string("there is no checkpoint")
                                           : r.decision.checkpoint + " means " + r.decision.mode),
        "the run directory changed under the launcher; requeue to decide again");
  }
  if (opt.expect_step0 >= 0 && opt.expect_step0 != r.step0) {
    BATON_FAIL(kExitConfig,
               "the launcher decided step0 " + std::to_string(opt.expect_step0) +
                   " but the checkpoint holds step " + std::to_string(r.step0),
               "the run directory changed under the launcher; requeue to decide again");
  }
  return r;
}

// Fault injection for tests: die by SIGKILL at a save point, or make the stop save slow.
SaveHooks FaultHooks(const TrainOptions& opt, int64_t step, const char* reason) {
  SaveHooks hooks;
  if (opt.fault.empty() || (opt.fault_at_step >= 0 && opt.fault_at_step != step)) return hooks;
  auto die = [] { ::kill(::getpid(), SIGKILL); };
  if (opt.fault == "mid_file") hooks.mid_file = die;
  if (opt.fault == "before_manifest") hooks.before_manifest = die;
  if (opt.fault == "before_rename") hooks.before_rename = die;
  if (opt.fault == "slow_save" && std::string(reason) == "signal") {
    hooks.before_manifest = [] { ::usleep(3000 * 1000); };  // to land a second SIGTERM inside it
  }
  return hooks;
}

// The episode ids of optimizer step `micro` .. `micro + accum` on every rank.
std::vector<std::string> StepEpisodeIds(DataPlan& plans, const DatasetIndex& index, int64_t micro,
                                        int64_t accum, int64_t world) {
  std::vector<std::string> ids;
  for (int64_t j = 0; j < accum; ++j) {
    for (int64_t r = 0; r < world; ++r) {
      for (int64_t i : plans.Batch(r, micro + j)) ids.push_back(index.episodes[size_t(i)].id);
    }
  }
  return ids;
}

std::string JoinIds(const std::vector<std::string>& ids, size_t max) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < max; ++i) s += (i ? ", " : "") + ids[i];
  if (ids.size() > max) s += ", ... (" + std::to_string(ids.size()) + " in all)";
  return s;
}

int TrainSegment(const TrainOptions& opt, SegmentLog& log) {
  // 1. Config.
  RunConfig config = BATON_VALUE_OR_FAIL(LoadRunConfig(opt.config_path, TrainerConfigOptions()),
                                         "fix the config (baton validate shows every problem)");
  const std::string run_dir = !opt.run_dir.empty() ? opt.run_dir : config.run.dir;
  if (run_dir.empty()) {
    BATON_FAIL(kExitConfig, opt.config_path + ": run.dir is empty and no --run-dir was given",
               "set run.dir or pass --run-dir");
  }
  const std::string job = EnvOr("SLURM_JOB_ID", "local");
  const int64_t restart = std::atoll(EnvOr("SLURM_RESTART_COUNT", "0"));
  log.SetPath(opt.events_path, run_dir, job, restart);
  const torch::Dtype dtype = config.train.dtype == DType::kFloat64    ? torch::kFloat64
                             : config.train.dtype == DType::kBFloat16 ? torch::kBFloat16
                                                                      : torch::kFloat32;
  const bool cuda = config.train.device == "cuda";
  torch::Device device(cuda ? torch::kCUDA : torch::kCPU);

  // 2. Ranks, and the CPU threads each may use (libtorch defaults to 1 here).
  const DistEnv env = DistEnvFromEnvironment();
  log.SetRank(env.rank);
  torch::set_num_threads(CpuThreadsPerRank(env));
  auto group = ProcessGroupHandle::Create(env, cuda);
  const bool leader = env.rank == 0;

  // 3. Data.
  auto loaded = LoadDatasetIndex(config.data.path);
  if (!loaded.ok()) {
    FailAt(__FILE__, __LINE__, kExitData, loaded.status().ToString(),
           "check data.path in " + opt.config_path);
  }
  auto index = std::make_shared<const DatasetIndex>(std::move(loaded).value());
  const DatasetShape shape = ResolveShape(*index);
  if (shape.height % config.model.patch_size != 0 || shape.width % config.model.patch_size != 0) {
    BATON_FAIL(kExitConfig,
               "model.patch_size " + std::to_string(config.model.patch_size) +
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
  const TrainerState identity = RunIdentity(config, *index, dims, env.world_size);
  const ResumePoint rp =
      Resume(opt, run_dir, config, identity, so, *index, model, optimizer, leader);
  const int64_t step0 = rp.step0;
  const std::shared_ptr<DataPlan> plans = rp.plans;
  LrSchedule schedule{config.optim.lr, config.optim.warmup_steps, step0, rp.resume_warmup};

  if (leader) {
    log.Open();
    for (const auto& why : rp.decision.skipped)
      std::fprintf(stderr, "resume: skipping %s\n", why.c_str());
    log.Write(
        event_type::kSegmentStart,
        {{"mode", rp.decision.mode},
         {"step0", step0},
         {"target_steps", config.run.steps},
         {"resume_warmup_steps", rp.resume_warmup},
         {"warmup_until", schedule.WarmupUntil()},
         {"checkpoint", rp.decision.checkpoint.empty() ? nlohmann::json(nullptr)
                                                       : nlohmann::json(rp.decision.checkpoint)},
         {"skipped", rp.decision.skipped},
         {"world_size", env.world_size},
         {"load_seconds", rp.load_seconds},
         {"config_hash", identity.config_hash},
         {"job_id", job},
         {"restart_count", restart}},
        /*sync=*/true);
    // Step numbers in messages are 1-based like the progress line (events keep 0-based indices).
    std::printf(
        "segment start: mode %s, step0 %lld, target %lld, resume warmup %lld (full LR from step "
        "%lld), "
        "%lld rank(s), checkpoint %s\n",
        rp.decision.mode.c_str(), (long long)step0, (long long)config.run.steps,
        (long long)rp.resume_warmup, (long long)schedule.WarmupUntil() + 1,
        (long long)env.world_size,
        rp.decision.checkpoint.empty() ? "none" : rp.decision.checkpoint.c_str());
    std::fflush(stdout);
  }

  auto end_segment = [&](int64_t step, const char* reason, int code, const std::string& message) {
    nlohmann::json rec{{"step", step},
                       {"reason", reason},
                       {"exit_code", code},
                       {"signal", StopSignal() != 0 && std::string(reason) == "signal"
                                      ? nlohmann::json(StopSignalName(StopSignal()))
                                      : nlohmann::json(nullptr)}};
    if (!message.empty()) rec["message"] = message;
    log.Write(event_type::kSegmentEnd, std::move(rec), /*sync=*/true);
  };

  // A stop signal that came while starting up (loading data, the model, a checkpoint): leave
  // before the first step, with nothing new to save. All ranks agree, or one would wait forever
  // in the first step's reduction.
  if (group->AnyRank(StopSignal() != 0) && step0 < config.run.steps) {
    if (leader) {
      end_segment(step0, "signal", kExitRequeue, "");
      std::printf(
          "stopping before step %lld on a stop request (%s): nothing new to save, exit %d\n",
          (long long)step0 + 1, StopSignalName(StopSignal()), kExitRequeue);
    }
    return kExitRequeue;
  }

  auto save = [&](int64_t steps_done, int64_t micro_done, double last_lr, const char* reason) {
    if (leader) {
      TrainerState st = identity;
      st.step = steps_done;
      st.micro_index = micro_done;
      std::tie(st.epoch, st.batch) = plans->Position(micro_done);
      st.origin_epoch = plans->origin_epoch();
      st.transition = plans->transition();
      st.base_lr = schedule.base_lr;
      st.warmup_steps = schedule.warmup_steps;
      st.lr_step0 = schedule.step0;
      st.resume_warmup = schedule.resume_warmup;
      st.last_lr = last_lr;
      SetSaving(true);
      const SaveResult r =
          SaveCheckpoint((fs::path(run_dir) / "checkpoints").string(), model, optimizer, st,
                         config.checkpoint, FaultHooks(opt, steps_done, reason));
      SetSaving(false);
      log.Write(event_type::kCheckpoint,
                {{"step", steps_done},
                 {"path", r.path},
                 {"bytes", r.bytes},
                 {"seconds", r.seconds},
                 {"reason", reason}},
                /*sync=*/true);
      std::printf("checkpoint %s: %.1f MB in %.2f s (%s)\n", r.path.c_str(), r.bytes / 1e6,
                  r.seconds, reason);
      std::fflush(stdout);
    }
    group->Barrier();  // no rank leaves (and gets its job step torn down) before the save is whole
  };

  // 6. Loop. Step s consumes micro-batches [s * accum, (s + 1) * accum) of every rank's plan.
  const int64_t micro0 = rp.micro0;
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
  int64_t profiled = 0, nonfinite_run = 0;
  const auto seg_t0 = Clock::now();
  double last_lr = 0;
  int64_t micro = micro0;
  for (int64_t step = step0; step < config.run.steps; ++step) {
    log.SetStep(step);
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
    const int64_t step_micro = micro;
    micro += accum;
    const bool profile = profiled < config.train.profile;
    const bool want_stop =
        StopSignal() != 0 || (opt.stop_after > 0 && step + 1 - step0 >= opt.stop_after);
    last_lr = schedule.At(step);
    const StepStats st = stepper.Step(batches, step, global_frames, last_lr, profile, want_stop);
    nonfinite_run = st.nonfinite ? nonfinite_run + 1 : 0;
    std::vector<std::string> bad_ids;
    if (st.nonfinite) bad_ids = StepEpisodeIds(*plans, *index, step_micro, accum, world);

    if (leader) {
      const double tok_s = st.seconds > 0 ? double(st.tokens) / st.seconds : 0.0;
      const double pad =
          st.padded_frames > 0 ? 1.0 - double(st.valid_frames) / double(st.padded_frames) : 0.0;
      nlohmann::json rec{{"step", step},
                         {"lr", last_lr},
                         {"loss", st.loss},
                         {"loss_video", st.loss_video},
                         {"loss_action", st.loss_action},
                         {"grad_norm", st.grad_norm},
                         {"tokens", st.tokens},
                         {"padded_tokens", st.padded_tokens},
                         {"samples", st.samples},
                         {"valid_frames", st.valid_frames},
                         {"padded_frames", st.padded_frames},
                         {"step_time_s", st.seconds},
                         {"tokens_per_s", tok_s},
                         {"in_warmup", schedule.InWarmup(step)},
                         {"epoch", plans->Position(micro - 1).first}};
      if (st.nonfinite) {
        rec["nonfinite"] = true;
        rec["nonfinite_episodes"] = bad_ids;
        rec["consecutive_nonfinite"] = nonfinite_run;
      }
      log.Write(event_type::kStep, std::move(rec));
      for (const auto& p : st.micro) {
        log.Write(event_type::kMicrostep, {{"step", step},
                                           {"micro", profiled},
                                           {"tokens", p.tokens},
                                           {"fwd_bwd_s", p.fwd_bwd_s},
                                           {"peak_bytes", p.peak_bytes}});
        std::printf("profile micro %lld: %lld tokens, fwd+bwd %.3f s, peak %.1f MB\n",
                    (long long)profiled, (long long)p.tokens, p.fwd_bwd_s, p.peak_bytes / 1e6);
        ++profiled;
      }
      if (st.nonfinite) {
        std::printf(
            "step %lld/%lld | NON-FINITE loss %g / grad norm %g: not applied (%lld in a row) | "
            "episodes %s\n",
            (long long)(step + 1), (long long)config.run.steps, st.loss, st.grad_norm,
            (long long)nonfinite_run, JoinIds(bad_ids, 8).c_str());
        std::fflush(stdout);
      } else if ((step + 1) % config.train.log_every == 0 || step + 1 == config.run.steps ||
                 st.stop) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - seg_t0).count();
        const double eta = elapsed / double(step + 1 - step0) * double(config.run.steps - step - 1);
        std::printf(
            "step %lld/%lld | loss %.4f (video %.4f, action %.4f) | lr %.3e | grad %.3f | "
            "%.0f tok/s | pad %.1f%% | ETA %s\n",
            (long long)(step + 1), (long long)config.run.steps, st.loss, st.loss_video,
            st.loss_action, last_lr, st.grad_norm, tok_s, 100 * pad, FormatDuration(eta).c_str());
        std::fflush(stdout);
      }
    } else {
      profiled += int64_t(st.micro.size());
    }

    const int64_t done = step + 1;
    if (nonfinite_run >= config.train.max_nonfinite_steps) {
      // Every rank saw the same reduced loss and gradient norm, so all stop here together.
      const std::string why =
          std::to_string(nonfinite_run) +
          " consecutive steps with a NaN/Inf loss or gradient norm (train.max_nonfinite_steps " +
          std::to_string(config.train.max_nonfinite_steps) + "), last at step " +
          std::to_string(done) + " on episodes " + JoinIds(bad_ids, 16) +
          "; none was applied, the last checkpoint is finite";
      if (leader) {
        end_segment(done, "diverged", kExitDiverged, why);
        std::fprintf(
            stderr,
            "baton-train: training diverged: %s\n  hint: lower optim.lr or check those episodes "
            "(baton-train data-check)\n",
            why.c_str());
      }
      return kExitDiverged;
    }
    if (st.stop && done < config.run.steps) {
      save(done, micro, last_lr, "signal");
      if (leader) {
        end_segment(done, "signal", kExitRequeue, "");
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
    end_segment(config.run.steps, "completed", kExitOk, "");
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
    log.WriteError(e.exit_code(), e.what(), -1);
    throw;
  } catch (const c10::Error& e) {
    log.WriteError(kExitInternal,
                   std::string("internal error in libtorch: ") + e.what_without_backtrace(), -1);
    throw;
  } catch (const std::exception& e) {
    log.WriteError(kExitInternal, std::string("internal error: ") + e.what(), -1);
    throw;
  }
}

}  // namespace baton
