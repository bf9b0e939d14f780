#include "orchestrator/store/record_json.h"

#include <cmath>

#include "orchestrator/store/attempt_evidence.h"

using nlohmann::json;

namespace baton {

json JsonNumber(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json JsonNumber(const std::optional<double>& v) { return v ? JsonNumber(*v) : json(nullptr); }
json JsonNumber(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }
json JsonTextOrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json RunJson(const RunRecord& r) {
  return json{{"id", r.id},
              {"name", r.name},
              {"status", Name(r.status)},
              {"reason", r.reason},
              {"run_dir", r.run_dir},
              {"config_source", r.config_source},
              {"partition", r.partition},
              {"owner", r.owner},
              {"cluster", r.cluster},
              {"target_steps", r.target_steps},
              {"max_restarts", r.max_restarts},
              {"max_failures", r.max_failures},
              {"job_id", JsonTextOrNull(r.job_id)},
              {"created_at", JsonNumber(r.created_at)},
              {"updated_at", JsonNumber(r.updated_at)}};
}

json AttemptJson(const AttemptRecord& a) {
  return json{{"job_id", a.job_id},
              {"restart_count", a.restart_count},
              {"nodes", a.nodes},
              {"started_at", JsonNumber(a.started_at)},
              {"ended_at", JsonNumber(a.ended_at)},
              {"slurm_state", JsonTextOrNull(a.slurm_state)},
              {"exit_code", JsonNumber(a.exit_code)},
              {"action", JsonTextOrNull(a.action)},
              {"end_reason", JsonTextOrNull(a.end_reason)},
              {"trainer_end_reason", JsonTextOrNull(a.trainer_end_reason)},
              {"trainer_message", JsonTextOrNull(a.trainer_message)},
              {"trainer_exit_code", JsonNumber(a.trainer_exit_code)},
              {"resume_mode", JsonTextOrNull(a.resume_mode)},
              {"checkpoint", JsonTextOrNull(a.checkpoint)},
              {"init_from", JsonTextOrNull(a.init_from)},
              {"step0", JsonNumber(a.step0)},
              {"last_step", JsonNumber(a.last_step)},
              {"resume_warmup_steps", a.resume_warmup_steps},
              {"warmup_until", JsonNumber(a.warmup_until)},
              {"world_size", JsonNumber(a.world_size)},
              {"trainer_signal", a.trainer_signal ? json(Name(*a.trainer_signal)) : json(nullptr)},
              {"slurm_reason", JsonTextOrNull(a.slurm_reason)},
              {"slurm_exit_code", JsonTextOrNull(a.slurm_exit_code)},
              {"hold_released_at", JsonNumber(a.hold_released_at)},
              {"hold_release_error", JsonTextOrNull(a.hold_release_error)},
              {"in_job_seq", a.in_job_seq},
              {"cluster", a.cluster},
              {"restart_cause", a.restart_cause ? json(*a.restart_cause) : json(nullptr)},
              {"hang_last_heartbeat_at", JsonNumber(a.hang_last_heartbeat_at)},
              {"hang_detected_at", JsonNumber(a.hang_detected_at)},
              {"hang_stale_ranks", a.hang_stale_ranks ? json(*a.hang_stale_ranks) : json(nullptr)},
              {"hang_stack", a.hang_stack ? json(*a.hang_stack) : json(nullptr)},
              {"signal", JsonTextOrNull(AttemptSignal(a))},
              {"log", AttemptLogPath(a) ? json(*AttemptLogPath(a)) : json(nullptr)}};
}

json CheckpointJson(const CheckpointRecord& c) {
  return json{{"step", c.step},
              {"path", c.path},
              {"bytes", c.bytes},
              {"seconds", JsonNumber(c.seconds)},
              {"reason", c.reason},
              {"valid", c.valid},
              {"time", JsonNumber(c.time)}};
}

json NonfiniteStepJson(const StepRecord& s, int64_t attempt) {
  return json{{"step", s.step},
              {"attempt", attempt},
              {"loss", JsonNumber(s.loss)},
              {"loss_video", JsonNumber(s.loss_video)},
              {"loss_action", JsonNumber(s.loss_action)},
              {"grad_norm", JsonNumber(s.grad_norm)},
              {"lr", JsonNumber(s.lr)},
              {"episodes", s.nonfinite_episodes},
              {"time", JsonNumber(s.time)}};
}

json WithoutKeys(json j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) j.erase(k);
  return j;
}

std::string DumpJson(const json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

}  // namespace baton
