#include "trainer/train/resume_point.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "schema/checkpoint_manifest.h"
#include "schema/clock.h"
#include "schema/exit_codes.h"
#include "schema/resume_decision.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/fail.h"
#include "trainer/train/train_step.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

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
      s.checkpoints_dir() + ".replaced-" + std::to_string(int64_t(UnixTimeNow()));
  std::error_code ec;
  fs::rename(s.checkpoints_dir(), aside, ec);
  if (ec)
    BATON_FAIL(kExitIo, s.checkpoints_dir() + ": cannot move aside: " + ec.message(),
               "check permissions");
  std::printf("start over: moved %lld checkpoint(s) to %s\n", (long long)valid, aside.c_str());
}

void CheckLauncherAgrees(const TrainOptions& opt, const ResumeDecision& d) {
  const std::optional<ResumeMode> expected = Find<ResumeMode>(opt.expect_mode);
  if (!opt.expect_mode.empty() && expected != d.mode) {
    BATON_FAIL(kExitConfig,
               "the launcher decided mode " + opt.expect_mode + " but " +
                   (d.checkpoint.empty() ? std::string("there is no checkpoint")
                                         : d.checkpoint + " means " + Name(d.mode)),
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

}  // namespace

ResumeDecision DecideStart(const TrainOptions& opt, const Setup& s) {
  if (opt.resume == "none") ClearForFreshStart(opt, s);
  ResumeRequest request;
  request.from = opt.resume;
  request.weights_only = IsOneOf(opt.resume_mode, {ResumeMode::kWeightsOnly});
  request.resume_warmup_steps = ResumeWarmup(opt, s);
  ResumeDecision d = BATON_VALUE_OR_FAIL(DecideResume(s.checkpoints_dir(), request),
                                         "pass auto, none, or a checkpoint_step_<N> folder");
  CheckLauncherAgrees(opt, d);
  return d;
}

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
  TrainerState st = LoadCheckpoint(
      r.decision.checkpoint, model, &optimizer, exact ? LoadMode::kFull : LoadMode::kWeightsOnly,
      LoadShare{s.env.rank, s.env.world_size, CpuThreadsPerRank(s.env)});
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

}  // namespace baton
