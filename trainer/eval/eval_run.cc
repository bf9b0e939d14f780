#include "trainer/eval/eval_run.h"

#include <chrono>

#include "schema/eval_results.h"
#include "trainer/eval/eval_loss.h"

namespace baton {

EvalEvent EvaluateCheckpoint(VideoActionModel& model, const RunConfig& config, const EvalSet& set,
                             const DatasetShape& shape, torch::Dtype dtype,
                             const torch::Device& device, ProcessGroupHandle& group,
                             const EvalTarget& target,
                             const std::function<void(int64_t)>& on_episode) {
  const auto t0 = std::chrono::steady_clock::now();
  const EvalValue v = EvaluateHeldOut(model, config, set, shape, dtype, device, group, on_episode);
  EvalEvent e;
  e.step = target.step;
  e.checkpoint = target.checkpoint;
  e.mode = Name(target.mode);
  e.loss = v.loss;
  e.loss_video = v.loss_video;
  e.loss_action = v.loss_action;
  e.episodes = v.episodes;
  e.valid_frames = v.valid_frames;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  e.config_hash = target.config_hash;
  e.job_id = target.job_id;
  return e;
}

Status WriteEvalFile(ProcessGroupHandle& group, const EvalTarget& target, const EvalEvent& e) {
  if (group.rank() != 0) return Status::Ok();
  return WriteEvalResult(target.run, e);
}

}  // namespace baton
