#include "trainer/eval/inline_eval.h"

#include <cstdio>
#include <filesystem>

#include "schema/eval_results.h"
#include "trainer/eval/eval_run.h"
#include "trainer/train/heartbeat.h"

namespace baton {
namespace fs = std::filesystem;

bool WantsInlineEval(const RunConfig& config, int64_t step) {
  return config.eval.mode == EvalMode::kInline && IsEvalTarget(config, step);
}

void EvalInline(SegmentLog& log, const Setup& s, VideoActionModel& model, int64_t step,
                const std::string& config_hash) {
  EvalTarget target;
  target.run = RunFolder{s.run_dir};
  target.step = step;
  target.checkpoint = target.run.CheckpointDir(step);
  target.mode = EvalMode::kInline;
  target.config_hash = config_hash;
  target.job_id = s.environment.job_id;
  // A beat per episode: the launcher sees a live rank, at the step the eval follows.
  const EvalEvent e =
      EvaluateCheckpoint(model, s.config, s.eval_set, s.shape, s.dtype, s.device, *s.group, target,
                         [step](int64_t i) { Beat(HeartbeatPhase::kMicroStep, step - 1, i); });
  if (!s.leader()) return;
  const Status written = WriteEvalFile(*s.group, target, e);
  if (!written.ok()) {
    std::fprintf(stderr, "baton-train: the eval result of step %lld was not written: %s\n",
                 (long long)step, written.ToString().c_str());
  }
  log.Write(e, /*sync=*/true);
  std::printf(
      "eval of step %lld: loss %.6g (video %.6g, action %.6g) over %lld episodes, %lld frames, "
      "%.2f s\n",
      (long long)step, e.loss, e.loss_video, e.loss_action, (long long)e.episodes,
      (long long)e.valid_frames, e.seconds);
  std::fflush(stdout);
}

void EvalResumedCheckpoint(SegmentLog& log, const Setup& s, VideoActionModel& model, int64_t step0,
                           const std::string& checkpoint, const std::string& config_hash) {
  if (step0 <= 0 || checkpoint.empty() || !WantsInlineEval(s.config, step0)) return;
  const RunFolder run{s.run_dir};
  // Only the run's own checkpoint of that step: one resumed from elsewhere is not this run's.
  const bool own = fs::path(checkpoint).lexically_normal() ==
                   fs::path(run.CheckpointDir(step0)).lexically_normal();
  std::error_code ec;
  const bool missing = own && !fs::exists(run.EvalFile(step0), ec);
  // Every rank evaluates or none: one that sees no result makes them all do it.
  if (!s.group->AnyRank(missing)) return;
  EvalInline(log, s, model, step0, config_hash);
}

}  // namespace baton
