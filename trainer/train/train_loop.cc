#include "trainer/train/train_loop.h"

#include <c10/util/Exception.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>

#include "schema/checkpoint_manifest.h"
#include "schema/events.h"
#include "schema/exit_codes.h"
#include "schema/lr_schedule.h"
#include "schema/resume_decision.h"
#include "schema/run_config.h"
#include "schema/run_folder.h"
#include "trainer/build_options.h"
#include "trainer/ckpt/async_saver.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/ckpt/save_phases.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/data/data_plan.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/empty_text.h"
#include "trainer/data/episode_reader.h"
#include "trainer/data/length_bucket_sampler.h"
#include "trainer/data/pad_collate.h"
#include "trainer/data/prefetch_loader.h"
#include "trainer/distributed/failure_agreement.h"
#include "trainer/distributed/process_group.h"
#include "trainer/fail.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/device_memory.h"
#include "trainer/train/device_select.h"
#include "trainer/train/heartbeat.h"
#include "trainer/train/run_folder_watch.h"
#include "trainer/train/segment_log.h"
#include "trainer/train/step_abandon.h"
#include "trainer/train/stop_signal.h"
#include "trainer/train/train_step.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

const char* EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : fallback;
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

std::string JoinIds(const std::vector<std::string>& ids, size_t max) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < max; ++i) s += (i ? ", " : "") + ids[i];
  if (ids.size() > max) s += ", ... (" + std::to_string(ids.size()) + " in all)";
  return s;
}

// ---- 1–3. What a segment runs on: the config, the ranks, the data. ----------------------------

struct Setup {
  RunConfig config;
  std::string run_dir, job;
  int64_t restart = 0;
  torch::Dtype dtype = torch::kFloat32;
  torch::Device device{torch::kCPU};
  DistEnv env;
  std::unique_ptr<ProcessGroupHandle> group;
  std::shared_ptr<const DatasetIndex> index;
  DatasetShape shape;
  SamplerOptions sampler;
  bool leader() const { return env.rank == 0; }
  std::string checkpoints_dir() const { return RunFolder{run_dir}.CheckpointsDir(); }
};

DatasetShape ResolveShape(const DatasetIndex& index) {
  if (index.shape) return *index.shape;
  auto first = ReadEpisode(index, 0);
  if (!first.ok())
    FailAt(__FILE__, __LINE__, first.status(), "fix or remove the episode named above");
  return first->shape;
}

Setup SetUp(const TrainOptions& opt, SegmentLog& log) {
  Setup s;
  // 1. Config.
  s.config = BATON_VALUE_OR_FAIL(LoadRunConfig(opt.config_path, TrainerConfigOptions()),
                                 "fix the config (baton validate shows every problem)");
  const RunConfig& config = s.config;
  s.run_dir = !opt.run_dir.empty() ? opt.run_dir : config.run.dir;
  if (s.run_dir.empty()) {
    BATON_FAIL(kExitConfig, opt.config_path + ": run.dir is empty and no --run-dir was given",
               "set run.dir or pass --run-dir");
  }
  s.job = EnvOr("SLURM_JOB_ID", "local");
  s.restart = std::atoll(EnvOr("SLURM_RESTART_COUNT", "0"));
  log.SetPath(opt.events_path, s.run_dir, s.job, s.restart);
  s.dtype = config.train.dtype == DType::kFloat64    ? torch::kFloat64
            : config.train.dtype == DType::kBFloat16 ? torch::kBFloat16
                                                     : torch::kFloat32;
  const bool cuda = config.train.device == Device::kCuda;

  // 2. Ranks, and the CPU threads each may use (libtorch defaults to 1 here); the GPU of this
  // rank, before anything touches CUDA.
  s.env = DistEnvFromEnvironment();
  log.SetRank(s.env.rank);
  StartHeartbeat(s.run_dir, s.env.rank);
  ApplyDeterminism(config.train.deterministic);
  s.device = SelectDevice(config.train.device, s.env.local_rank);
  torch::set_num_threads(CpuThreadsPerRank(s.env));
  s.group = ProcessGroupHandle::Create(s.env, cuda);

  // 3. Data.
  auto loaded = LoadDatasetIndex(config.data.path);
  if (!loaded.ok()) {
    FailAt(__FILE__, __LINE__, kExitData, loaded.status().ToString(),
           "check data.path in " + opt.config_path);
  }
  s.index = std::make_shared<const DatasetIndex>(std::move(loaded).value());
  s.shape = ResolveShape(*s.index);
  if (s.shape.height % config.model.patch_size != 0 ||
      s.shape.width % config.model.patch_size != 0) {
    BATON_FAIL(kExitConfig,
               "model.patch_size " + std::to_string(config.model.patch_size) +
                   " does not divide the latent size " + std::to_string(s.shape.height) + "x" +
                   std::to_string(s.shape.width) + " of " + config.data.path,
               "choose a patch size that divides H and W");
  }
  s.sampler.batch_size = config.data.batch_size;
  s.sampler.world_size = s.env.world_size;
  s.sampler.rank = s.env.rank;
  s.sampler.pool_factor = config.data.pool_factor;
  s.sampler.seed = uint64_t(config.run.seed);
  s.sampler.plan = config.data.plan;
  return s;
}

// What the run is, independent of how far it got: the fields an exact resume must find equal.
TrainerState RunIdentity(const Setup& s, const ModelDims& dims) {
  TrainerState st;
  st.world_size = s.env.world_size;
  st.sampler.batch_size = s.config.data.batch_size;
  st.sampler.plan = SamplerPlanName(s.config.data.plan);
  st.grad_accum = s.config.optim.grad_accum;
  st.seed = s.config.run.seed;
  st.config_hash = ConfigHash(dims);
  st.dtype = DTypeName(s.config.train.dtype);
  st.pad_multiple = s.config.data.pad_multiple;
  st.data_path = s.index->dir;
  st.dataset_fingerprint = s.index->fingerprint;
  return st;
}

// ---- 5. Resume. -------------------------------------------------------------------------------

// --resume none into a folder that already holds a run's checkpoints would interleave two runs'
// checkpoints, and the next --resume auto would continue the wrong one: refuse, or with
// --start-over move them aside (nothing is deleted).
void ClearForFreshStart(const TrainOptions& o, const Setup& s) {
  int64_t valid = 0, newest = -1;
  for (const auto& c : ListCheckpoints(s.checkpoints_dir(), /*check_hashes=*/false)) {
    if (!c.valid) continue;
    ++valid;
    newest = std::max(newest, c.step);
  }
  if (valid == 0) return;
  if (!o.start_over) {
    BATON_FAIL(
        kExitConfig,
        "--resume none: " + s.checkpoints_dir() + " holds " + std::to_string(valid) +
            " valid checkpoint(s) of a run (newest: step " + std::to_string(newest) + ")",
        "use --resume auto to continue it, another run folder, or --start-over to move them aside");
  }
  if (!s.leader()) return;
  const std::string aside =
      s.checkpoints_dir() + ".replaced-" + std::to_string(int64_t(std::time(nullptr)));
  std::error_code ec;
  fs::rename(s.checkpoints_dir(), aside, ec);
  if (ec)
    BATON_FAIL(kExitIo, s.checkpoints_dir() + ": cannot move aside: " + ec.message(),
               "check permissions");
  std::printf("start over: moved %lld checkpoint(s) to %s\n", (long long)valid, aside.c_str());
}

// Where this segment starts: the checkpoint's weights, AdamW state, data position and LR.
struct ResumePoint {
  ResumeDecision decision;
  std::string init_from;  // the transformer/ folder the weights came from ("" when none)
  int64_t micro0 = 0;
  double load_seconds = 0;
  std::shared_ptr<DataPlan> plans;
  LrSchedule schedule;
  int64_t step0() const { return decision.step0; }
};

void CheckLauncherAgrees(const TrainOptions& opt, const ResumeDecision& d) {
  const std::optional<ResumeMode> expected = ParseResumeMode(opt.expect_mode);
  if (!opt.expect_mode.empty() && expected != d.mode) {
    BATON_FAIL(kExitConfig,
               "the launcher decided mode " + opt.expect_mode + " but " +
                   (d.checkpoint.empty() ? std::string("there is no checkpoint")
                                         : d.checkpoint + " means " + ResumeModeName(d.mode)),
               "the run directory changed under the launcher; requeue to decide again");
  }
  if (opt.expect_step0 >= 0 && opt.expect_step0 != d.step0) {
    BATON_FAIL(kExitConfig,
               "the launcher decided step0 " + std::to_string(opt.expect_step0) +
                   " but the checkpoint holds step " + std::to_string(d.step0),
               "the run directory changed under the launcher; requeue to decide again");
  }
}

int64_t ResumeWarmup(const TrainOptions& opt, const Setup& s) {
  return opt.resume_warmup >= 0 ? opt.resume_warmup : s.config.optim.resume_warmup_steps;
}

// Which checkpoint the segment starts from, decided before the model is built: the sizes of a
// run that has its own checkpoint come from it (StartDims).
ResumeDecision DecideStart(const TrainOptions& opt, const Setup& s) {
  if (opt.resume == "none") ClearForFreshStart(opt, s);
  ResumeRequest request;
  request.from = opt.resume;
  request.weights_only = opt.resume_mode == "weights_only";
  request.resume_warmup_steps = ResumeWarmup(opt, s);
  ResumeDecision d = BATON_VALUE_OR_FAIL(DecideResume(s.checkpoints_dir(), request),
                                         "pass auto, none, or a checkpoint_step_<N> folder");
  CheckLauncherAgrees(opt, d);
  return d;
}

// The model sizes, and the upstream folder to load (only on a fresh start). With an init folder
// its config.json gives the sizes of a fresh start; a resume takes them from its checkpoint's
// transformer/config.json and never reads the init folder, which may be gone (moved or purged)
// by the time a requeued segment starts. Checked against the weights' headers before a model of
// these sizes is allocated.
ModelDims StartDims(const TrainOptions& opt, const Setup& s, const ResumeDecision& start,
                    std::string* init_dir) {
  ModelDims dims = MakeModelDims(s.config, s.shape);
  const std::string init_from = !opt.init_from.empty() ? opt.init_from : s.config.model.init_from;
  if (init_from.empty()) {
    if (opt.step0 >= 0) {
      BATON_FAIL(kExitConfig,
                 "--step0 continues an upstream run and needs --init-from (or model.init_from)",
                 "a run's own checkpoints carry their step");
    }
    return dims;
  }
  const std::string tdir = start.mode == ResumeMode::kFresh
                               ? FindTransformerDir(init_from)
                               : (fs::path(start.checkpoint) / "transformer").string();
  const ModelDims folder = ReadUpstreamDims(tdir);
  CheckTransformerWeights(tdir, folder);
  if (start.mode == ResumeMode::kFresh) *init_dir = tdir;
  return ReconcileInitDims(folder, tdir, s.config.model, dims);
}

ResumePoint Resume(const TrainOptions& opt, const Setup& s, const ResumeDecision& start,
                   const TrainerState& identity, VideoActionModel& model, AdamW& optimizer,
                   const std::string& init_dir) {
  ResumePoint r;
  r.decision = start;
  if (r.step0() > s.config.run.steps) {
    BATON_FAIL(kExitConfig,
               "run.steps " + std::to_string(s.config.run.steps) + " is below the step of " +
                   r.decision.checkpoint + " (" + std::to_string(r.step0()) + ")",
               "raise run.steps to continue training, or resume from an earlier checkpoint");
  }
  r.plans = std::make_shared<DataPlan>(s.index->BucketKeys(), s.sampler);
  if (r.decision.mode == ResumeMode::kFresh && !init_dir.empty()) {
    // Weights from an upstream folder: fresh AdamW. With --step0 N the segment continues that
    // run's LR curve at N with the resume warmup, like a weights-only resume.
    if (opt.step0 > 0) {
      if (opt.step0 > s.config.run.steps) {
        BATON_FAIL(kExitConfig,
                   "--step0 " + std::to_string(opt.step0) + " is beyond run.steps " +
                       std::to_string(s.config.run.steps),
                   "raise run.steps");
      }
      r.decision.step0 = opt.step0;
      r.decision.resume_warmup_steps = ResumeWarmup(opt, s);
      r.micro0 = opt.step0 * s.config.optim.grad_accum;
    }
    const auto load_t0 = Clock::now();
    LoadTransformerWeights(init_dir, model);
    r.load_seconds = std::chrono::duration<double>(Clock::now() - load_t0).count();
    r.init_from = init_dir;
  }
  r.schedule = LrSchedule::ForSegment(s.config, r.step0(), r.decision.resume_warmup_steps);
  if (r.decision.mode == ResumeMode::kFresh) return r;

  const bool exact = r.decision.mode == ResumeMode::kExact;
  const auto load_t0 = Clock::now();
  TrainerState st = LoadCheckpoint(r.decision.checkpoint, model, &optimizer,
                                   exact ? LoadMode::kFull : LoadMode::kWeightsOnly,
                                   LoadShare{s.env.rank, s.env.world_size});
  r.load_seconds = std::chrono::duration<double>(Clock::now() - load_t0).count();
  if (!exact) {
    r.micro0 = r.step0() * s.config.optim.grad_accum;  // no data position: assume step-aligned
    return r;
  }
  if (const auto diff = ExactResumeDifferences(st, identity); !diff.empty()) {
    std::string lines;
    for (const auto& d : diff) lines += "\n    " + d;
    BATON_FAIL(
        kExitConfig,
        r.decision.checkpoint +
            " belongs to another run; an exact resume needs these equal:" + lines,
        "restore the run's config and data, resume weights only (--resume-mode weights_only), "
        "or start a new run folder");
  }
  SamplerOptions old_so = s.sampler;
  old_so.world_size = st.world_size;
  DataPlan old_plan = DataPlan::FromCursor(s.index->BucketKeys(), old_so, st.sampler);
  r.micro0 = st.sampler.micro_index;
  if (st.world_size != identity.world_size) {
    // Keep the global data position: deal the rest of the current epoch to the new ranks.
    int64_t repeated = 0;
    r.plans = std::make_shared<DataPlan>(
        old_plan.Reshard(st.sampler.micro_index, identity.world_size, &repeated));
    r.micro0 = 0;
    if (s.leader()) {
      std::printf(
          "resharding data from %lld to %lld ranks at epoch %lld, batch %lld: %lld batches per "
          "rank "
          "left in the epoch (%lld padding batches)\n",
          (long long)st.world_size, (long long)identity.world_size, (long long)st.sampler.epoch,
          (long long)st.sampler.batch,
          (long long)(r.plans->transition().empty() ? 0 : r.plans->transition().batches[0].size()),
          (long long)repeated);
    }
  } else {
    r.plans = std::make_shared<DataPlan>(old_plan);
  }
  return r;
}

void ReportSegmentStart(SegmentLog& log, const Setup& s, const ResumePoint& rp,
                        const TrainerState& identity) {
  if (!s.leader()) return;
  log.Open();
  for (const auto& why : rp.decision.skipped)
    std::fprintf(stderr, "resume: skipping %s\n", why.c_str());
  SegmentStartEvent e;
  e.mode = ResumeModeName(rp.decision.mode);
  e.step0 = rp.step0();
  e.target_steps = s.config.run.steps;
  e.resume_warmup_steps = rp.decision.resume_warmup_steps;
  e.warmup_until = rp.schedule.WarmupUntil();
  if (!rp.decision.checkpoint.empty()) e.checkpoint = rp.decision.checkpoint;
  e.init_from = rp.init_from;
  e.skipped = rp.decision.skipped;
  e.world_size = s.env.world_size;
  e.load_seconds = rp.load_seconds;
  e.config_hash = identity.config_hash;
  e.job_id = s.job;
  e.restart_count = s.restart;
  log.Write(e, /*sync=*/true);
  // Step numbers in messages are 1-based like the progress line (events keep 0-based indices).
  std::printf(
      "segment start: mode %s, step0 %lld, target %lld, resume warmup %lld (full LR from step "
      "%lld), "
      "%lld rank(s) on %s, checkpoint %s%s%s\n",
      ResumeModeName(rp.decision.mode), (long long)rp.step0(), (long long)s.config.run.steps,
      (long long)rp.decision.resume_warmup_steps, (long long)rp.schedule.WarmupUntil() + 1,
      (long long)s.env.world_size, DeviceDescription(s.device).c_str(),
      rp.decision.checkpoint.empty() ? "none" : rp.decision.checkpoint.c_str(),
      rp.init_from.empty() ? "" : ", weights from ", rp.init_from.c_str());
  std::fflush(stdout);
}

void EndSegment(SegmentLog& log, int64_t step, SegmentEndReason reason, int code,
                const std::string& message = "") {
  SegmentEndEvent e;
  e.step = step;
  e.reason = SegmentEndReasonName(reason);
  e.exit_code = code;
  if (reason == SegmentEndReason::kSignal && AgreedStopSignal() != 0)
    e.signal = StopSignalName(AgreedStopSignal());
  e.message = message;
  log.Write(e, /*sync=*/true);
}

// ---- 6. Saving, and what a step reports. --------------------------------------------------

// Fault injection for tests: die by SIGKILL at a save point, or make the stop save slow.
SaveHooks FaultHooks(const TrainTestHooks& t, int64_t rank, int64_t step, const char* reason) {
  SaveHooks hooks;
  if (t.fault.empty() || (t.fault_at_step >= 0 && t.fault_at_step != step)) return hooks;
  if (rank != t.fault_rank) return hooks;
  auto die = [] { ::kill(::getpid(), SIGKILL); };
  if (t.fault == "mid_file") hooks.mid_file = die;
  if (t.fault == "before_manifest") hooks.before_manifest = die;
  if (t.fault == "before_rename") hooks.before_rename = die;
  if (t.fault == "write_error") {
    hooks.mid_file = [] {
      BATON_FAIL(kExitIo, "injected write failure (--fault write_error)", "");
    };
  }
  if (t.fault == "slow_save" && std::string(reason) == "signal") {
    hooks.before_manifest = [] { ::usleep(3000 * 1000); };  // to land a second SIGTERM inside it
  }
  return hooks;
}

// The checkpoint event and line of a committed save (rank 0). `how` adds an async save's figures.
void ReportSave(SegmentLog& log, const Setup& s, const SaveResult& r, int64_t steps_done,
                const char* reason, const std::string& how = "") {
  HeartbeatTransferRate(r.bytes, r.seconds);  // every rank: the next save's hang budget
  if (!s.leader()) return;
  CheckpointEvent e;
  e.step = steps_done;
  e.path = r.path;
  e.bytes = r.bytes;
  e.seconds = r.seconds;
  e.reason = reason;
  log.Write(e, /*sync=*/true);
  std::string per_rank;
  for (int64_t b : r.rank_bytes) per_rank += " " + std::to_string(b);
  std::printf("checkpoint %s: %.1f MB in %.2f s (%s)%s%s%s\n", r.path.c_str(), r.bytes / 1e6,
              r.seconds, reason, how.c_str(), r.rank_bytes.size() > 1 ? ", bytes per rank:" : "",
              r.rank_bytes.size() > 1 ? per_rank.c_str() : "");
  std::fflush(stdout);
}

// Commits the background save once every rank's part is written (a step boundary; collective
// on W > 1 while one is in flight). `wait`: wait for it (the next save needs the folder).
void CommitBackgroundSave(SegmentLog& log, const Setup& s, AsyncSaver& saver, int64_t at_step,
                          bool wait) {
  if (!saver.in_flight() || (!wait && !saver.AllWritten())) return;
  const int64_t step = saver.step();
  RunAgreed(*s.group, "while committing a background checkpoint", [&]() -> std::string {
    const SaveResult r = saver.Commit();
    char how[320];
    std::snprintf(how, sizeof how,
                  ", async: training stalled %.3f s (snapshot %.3f s + commit %.3f s), waited "
                  "%.3f s for the write, written in the background in %.2f s over %lld step(s), "
                  "committed after step %lld",
                  saver.snapshot_seconds() + saver.commit_seconds(), saver.snapshot_seconds(),
                  saver.commit_seconds(), saver.waited_seconds(), saver.write_seconds(),
                  (long long)saver.steps_overlapped(), (long long)at_step);
    ReportSave(log, s, r, step, "periodic", how);
    return "";
  });
}

// Before any other save: the background one is committed (waited for), or on a stop abandoned
// when the rest of it and the stop save would not fit the grace budget. False when it was
// abandoned (every rank decides alike).
bool SettleBackgroundSave(SegmentLog& log, const Setup& s, AsyncSaver& saver, int64_t at_step,
                          const char* reason, int64_t next_bytes) {
  if (!saver.in_flight()) return true;
  if (std::string(reason) == "signal") {
    std::string why;
    if (!saver.FinishFits(next_bytes, &why)) {
      const int64_t step = saver.step();
      saver.Abandon();
      if (s.leader()) {
        std::printf("abandoned the background save of step %lld on the stop request: %s\n",
                    (long long)step, why.c_str());
        std::fflush(stdout);
      }
      return false;
    }
    if (s.leader()) {
      std::printf("finishing the background save of step %lld before the stop save: %s\n",
                  (long long)saver.step(), why.c_str());
      std::fflush(stdout);
    }
    SetSaving(true);  // waiting for it is part of the stop save: a second SIGTERM exits at once
  }
  CommitBackgroundSave(log, s, saver, at_step, /*wait=*/true);
  return true;
}

// Rank 0 writes the checkpoint of the state after `steps_done` steps (with sharded optimizer
// state every rank writes its part); every rank waits for it, so no rank leaves (and gets its job
// step torn down) before the save is whole. A periodic save with checkpoint.async is only
// snapshotted here and written in the background (AsyncSaver); the final and the stop save are
// written here, after a background save in flight was committed or abandoned.
void Save(SegmentLog& log, const Setup& s, const TrainTestHooks& t, VideoActionModel& model,
          const AdamW& optimizer, const ShardPlan* shard_plan, const TrainerState& identity,
          const ResumePoint& rp, int64_t steps_done, int64_t micro_done, double last_lr,
          const char* reason, AsyncSaver& saver) {
  // On W > 1 ranks every rank writes the files of the parameters it owns: optim.shard's plan, or
  // the same element-balanced plan in a replicated run.
  SaveTeam team;
  if (s.env.world_size > 1) {
    team.rank = s.env.rank;
    team.world = s.env.world_size;
    if (shard_plan != nullptr) {
      team.owner = shard_plan->owner;
    } else {
      std::vector<int64_t> numels;
      for (const auto& p : optimizer.state()) numels.push_back(p.param.numel());
      team.owner = MakeShardPlan(numels, s.env.world_size).owner;
    }
    ProcessGroupHandle* group = s.group.get();
    team.any_rank = [group](bool flag) { return group->AnyRank(flag); };
    team.agreed = [group](const std::string& phase, const std::function<std::string()>& part) {
      return RunAgreed(*group, phase, part);
    };
  }
  // The save's own budget for the launcher's hang watch: weights and both AdamW moments.
  int64_t save_bytes = 0;
  for (const auto& p : optimizer.state())
    save_bytes += 3 * p.param.numel() * int64_t(p.param.element_size());
  Beat(HeartbeatPhase::kSave, steps_done, 0, TransferBudgetS(save_bytes));
  SleepSeconds(TestHooksFromEnv().save_sleep_s);
  const bool periodic = std::string(reason) == "periodic";
  SettleBackgroundSave(log, s, saver, steps_done, reason, saver.bytes());
  // Every rank leaves the save together, with one exit code when any rank's part failed.
  RunAgreed(*s.group, "while saving a checkpoint", [&]() -> std::string {
    {
      TrainerState st = identity;
      st.step = steps_done;
      st.sampler = rp.plans->Cursor(micro_done);
      st.lr = rp.schedule;
      st.last_lr = last_lr;
      const SaveHooks hooks = FaultHooks(t, s.env.rank, steps_done, reason);
      const SaveTeam* tp = s.env.world_size > 1 ? &team : nullptr;
      if (periodic && s.config.checkpoint.async) {
        PreparedSave p =
            PrepareSave(s.checkpoints_dir(), model, optimizer, st, s.config.checkpoint, hooks, tp);
        const std::string& refusal =
            saver.Refusal(p, int64_t(s.config.slurm.mem_per_task_gb * double(int64_t(1) << 30)));
        if (refusal.empty()) {
          saver.Start(std::move(p));
          return "";
        }
        if (saver.FirstRefusal() && s.leader()) {
          std::printf("checkpoint.async: periodic saves are synchronous: %s\n", refusal.c_str());
        }
        SetSaving(true);
        const SaveResult r = CommitSave(p, [&] { return WriteSaveFiles(p); });
        SetSaving(false);
        ReportSave(log, s, r, steps_done, reason);
        return "";
      }
      SetSaving(true);
      const SaveResult r =
          SaveCheckpoint(s.checkpoints_dir(), model, optimizer, st, s.config.checkpoint, hooks, tp);
      SetSaving(false);
      ReportSave(log, s, r, steps_done, reason);
    }
    return "";
  });
}

// The episode ids of the optimizer step starting at micro index `micro`, on every rank.
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

// The step event, the micro-step profile and the progress line (rank 0).
struct StepReporter {
  SegmentLog& log;
  const Setup& s;
  const ResumePoint& rp;
  Clock::time_point t0 = Clock::now();
  int64_t profiled = 0;

  void Report(int64_t step, const StepStats& st, double lr, int64_t epoch, int64_t nonfinite_run,
              const std::vector<std::string>& bad_ids) {
    if (!s.leader()) {
      profiled += int64_t(st.micro.size());
      return;
    }
    const int64_t steps = s.config.run.steps;
    const double tok_s = st.seconds > 0 ? double(st.tokens) / st.seconds : 0.0;
    const double pad =
        st.padded_frames > 0 ? 1.0 - double(st.valid_frames) / double(st.padded_frames) : 0.0;
    StepEvent e;
    e.step = step;
    e.lr = lr;
    e.loss = st.loss;
    e.loss_video = st.loss_video;
    e.loss_action = st.loss_action;
    e.grad_norm = st.grad_norm;
    e.tokens = st.tokens;
    e.padded_tokens = st.padded_tokens;
    e.samples = st.samples;
    e.valid_frames = st.valid_frames;
    e.padded_frames = st.padded_frames;
    e.step_time_s = st.seconds;
    e.tokens_per_s = tok_s;
    e.in_warmup = rp.schedule.InWarmup(step);
    e.epoch = epoch;
    e.nonfinite = st.nonfinite;
    e.nonfinite_episodes = bad_ids;
    e.consecutive_nonfinite = nonfinite_run;
    log.Write(e);
    for (const auto& p : st.micro) {
      log.Write(MicrostepEvent{step, profiled, p.tokens, p.fwd_bwd_s, p.peak_bytes});
      std::printf("profile micro %lld: %lld tokens, fwd+bwd %.3f s, peak %.1f MB\n",
                  (long long)profiled, (long long)p.tokens, p.fwd_bwd_s, p.peak_bytes / 1e6);
      ++profiled;
    }
    if (st.nonfinite) {
      std::printf(
          "step %lld/%lld | NON-FINITE loss %g / grad norm %g: not applied (%lld in a row) | "
          "episodes %s\n",
          (long long)(step + 1), (long long)steps, st.loss, st.grad_norm, (long long)nonfinite_run,
          JoinIds(bad_ids, 8).c_str());
    } else if ((step + 1) % s.config.train.log_every == 0 || step + 1 == steps || st.stop) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
      const double eta = elapsed / double(step + 1 - rp.step0()) * double(steps - step - 1);
      std::printf(
          "step %lld/%lld | loss %.4f (video %.4f, action %.4f) | lr %.3e | grad %.3f | %.0f tok/s "
          "| "
          "pad %.1f%% | ETA %s\n",
          (long long)(step + 1), (long long)steps, st.loss, st.loss_video, st.loss_action, lr,
          st.grad_norm, tok_s, 100 * pad, FormatDuration(eta).c_str());
    }
    std::fflush(stdout);
  }
};

// A step abandoned on a stop signal (step_abandon.h): every rank says where its signal landed,
// the state of the step's start is saved unless this segment began there or saved it already,
// and the segment ends for a requeue.
int StopAbandoned(SegmentLog& log, const Setup& s, const StepAbandoned& a,
                  const std::function<void()>& save, bool saved) {
  const long long n = (long long)a.step + 1, r = (long long)s.env.rank;
  if (a.latency_s >= 0) {
    std::printf(
        "abandoned step %lld (rank %lld): %s landed in %s; left %s, %.4f s after the signal; "
        "one block fwd+bwd %.4f s (median of this step's; longest in the latest step %.4f s)\n",
        n, r, StopSignalName(StopSignal()), a.landed.c_str(), a.left.c_str(), a.latency_s,
        a.block_median_s, a.block_s);
  } else {
    std::printf("abandoned step %lld (rank %lld): on the stop request (%s) of rank %d\n", n, r,
                StopSignalName(a.signal), a.signal_rank);
  }
  std::fflush(stdout);
  if (!saved) save();
  if (s.leader()) {
    EndSegment(log, a.step, SegmentEndReason::kSignal, kExitRequeue);
    std::printf("stopping at the start of step %lld on a stop request (%s): %s, exit %d\n", n,
                StopSignalName(a.signal), saved ? "nothing new to save" : "checkpointed",
                kExitRequeue);
    std::fflush(stdout);
  }
  return kExitRequeue;
}

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

// Test audit trail (TrainTestHooks::episode_log): this rank's episodes per micro-step.
void LogEpisodes(std::FILE* f, int64_t step, const std::vector<PaddedBatch>& batches) {
  if (f == nullptr) return;
  for (const auto& b : batches) {
    std::fprintf(f, "%lld", (long long)step);
    for (int64_t e : b.episodes) std::fprintf(f, " %lld", (long long)e);
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
  auto save = [&](int64_t done, int64_t micro, double lr, const char* why) {
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
      // periodic save of it committed. That save may still be in the background: finished, it is
      // the stop's checkpoint; abandoned (it would not fit the grace), the stop save writes it.
      bool saved = step == rp.step0();
      if (!saved && step % config.checkpoint.every == 0) {
        saved = !(saver.in_flight() && saver.step() == step) ||
                SettleBackgroundSave(log, s, saver, step, "signal", saver.bytes());
      }
      return StopAbandoned(
          log, s, a,
          [&] {
            // The state of this step's start: `step` steps done, data position `micro`.
            save(step, micro, rp.schedule.At(step - 1), "signal");
          },
          saved);
    }
    HeartbeatStepDone(st.seconds);
    LogEpisodes(episode_log, step, batches);  // trained ones only: an abandoned step is re-done
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
      save(done, micro, lr, "signal");
      if (s.leader()) {
        EndSegment(log, done, SegmentEndReason::kSignal, kExitRequeue);
        std::printf("stopping after step %lld on a stop request (%s): checkpointed, exit %d\n",
                    (long long)done, StopSignalName(StopSignal()), kExitRequeue);
      }
      return kExitRequeue;
    }
    if (done == config.run.steps) {
      save(done, micro, lr, "final");
    } else if (done % config.checkpoint.every == 0) {
      save(done, micro, lr, "periodic");
    } else {
      CommitBackgroundSave(log, s, saver, done, /*wait=*/false);
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
