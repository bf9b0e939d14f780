#include "schema/event_records.h"

namespace baton {

using nlohmann::json;

namespace {

// ---- Lenient field readers (see the header). ----

double Num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return kNoNumber;
  const double v = it->get<double>();
  return std::isfinite(v) ? v : kNoNumber;
}

std::optional<int64_t> OptInt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    if (v > uint64_t(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  const double v = it->get<double>();
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!std::isfinite(v) || v >= kTwoTo63 || v < -kTwoTo63) return std::nullopt;
  return static_cast<int64_t>(v);
}

int64_t Int(const json& j, const char* key) { return OptInt(j, key).value_or(0); }

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::string> OptStr(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool Bool(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// Strings as written; integers as their text (an index instead of a name is still worth
// showing); anything else skipped.
std::vector<std::string> Strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const json& v : *it) {
    if (v.is_string()) {
      out.push_back(v.get<std::string>());
    } else if (v.is_number_integer()) {
      out.push_back(v.dump());
    }
  }
  return out;
}

// NaN is written as null (JSON has no NaN), an absent optional as null.
json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
template <class T>
json Optional(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

json SegmentStartEvent::ToJson() const {
  return json{{"mode", mode},
              {"step0", Optional(step0)},
              {"target_steps", target_steps},
              {"resume_warmup_steps", resume_warmup_steps.value_or(0)},
              {"warmup_until", Optional(warmup_until)},
              {"checkpoint", Optional(checkpoint)},
              {"init_from", init_from},
              {"skipped", skipped},
              {"world_size", Optional(world_size)},
              {"load_seconds", Number(load_seconds)},
              {"config_hash", config_hash},
              {"job_id", job_id},
              {"restart_count", restart_count}};
}

SegmentStartEvent SegmentStartEvent::FromJson(const json& j) {
  SegmentStartEvent e;
  e.mode = Str(j, "mode");
  e.step0 = OptInt(j, "step0");
  e.target_steps = Int(j, "target_steps");
  e.resume_warmup_steps = OptInt(j, "resume_warmup_steps");
  e.warmup_until = OptInt(j, "warmup_until");
  e.checkpoint = OptStr(j, "checkpoint");
  e.init_from = Str(j, "init_from");
  e.skipped = Strings(j, "skipped");
  e.world_size = OptInt(j, "world_size");
  e.load_seconds = Num(j, "load_seconds");
  e.config_hash = Str(j, "config_hash");
  e.job_id = Str(j, "job_id");
  e.restart_count = Int(j, "restart_count");
  return e;
}

json StepEvent::ToJson() const {
  json j{{"step", Optional(step)},
         {"lr", Number(lr)},
         {"loss", Number(loss)},
         {"loss_video", Number(loss_video)},
         {"loss_action", Number(loss_action)},
         {"grad_norm", Number(grad_norm)},
         {"tokens", tokens},
         {"padded_tokens", padded_tokens},
         {"samples", samples},
         {"valid_frames", valid_frames},
         {"padded_frames", padded_frames},
         {"step_time_s", Number(step_time_s)},
         {"tokens_per_s", Number(tokens_per_s)},
         {"in_warmup", in_warmup},
         {"epoch", epoch}};
  if (nonfinite) {
    j["nonfinite"] = true;
    j["nonfinite_episodes"] = nonfinite_episodes;
    j["consecutive_nonfinite"] = consecutive_nonfinite;
  }
  return j;
}

StepEvent StepEvent::FromJson(const json& j) {
  StepEvent e;
  e.step = OptInt(j, "step");
  e.lr = Num(j, "lr");
  e.loss = Num(j, "loss");
  e.loss_video = Num(j, "loss_video");
  e.loss_action = Num(j, "loss_action");
  e.grad_norm = Num(j, "grad_norm");
  e.tokens = Int(j, "tokens");
  e.padded_tokens = Int(j, "padded_tokens");
  e.samples = Int(j, "samples");
  e.valid_frames = Int(j, "valid_frames");
  e.padded_frames = Int(j, "padded_frames");
  e.step_time_s = Num(j, "step_time_s");
  e.tokens_per_s = Num(j, "tokens_per_s");
  e.in_warmup = Bool(j, "in_warmup");
  e.epoch = Int(j, "epoch");
  e.nonfinite = Bool(j, "nonfinite");
  if (e.nonfinite) e.nonfinite_episodes = Strings(j, "nonfinite_episodes");
  e.consecutive_nonfinite = Int(j, "consecutive_nonfinite");
  return e;
}

json MicrostepEvent::ToJson() const {
  return json{{"step", step},
              {"micro", micro},
              {"tokens", tokens},
              {"fwd_bwd_s", Number(fwd_bwd_s)},
              {"peak_bytes", peak_bytes}};
}

MicrostepEvent MicrostepEvent::FromJson(const json& j) {
  MicrostepEvent e;
  e.step = Int(j, "step");
  e.micro = Int(j, "micro");
  e.tokens = Int(j, "tokens");
  e.fwd_bwd_s = Num(j, "fwd_bwd_s");
  e.peak_bytes = Int(j, "peak_bytes");
  return e;
}

json CheckpointEvent::ToJson() const {
  return json{{"step", Optional(step)},
              {"path", path},
              {"bytes", bytes},
              {"seconds", Number(seconds)},
              {"reason", reason}};
}

CheckpointEvent CheckpointEvent::FromJson(const json& j) {
  CheckpointEvent e;
  e.step = OptInt(j, "step");
  e.path = Str(j, "path");
  e.bytes = Int(j, "bytes");
  e.seconds = Num(j, "seconds");
  e.reason = Str(j, "reason");
  return e;
}

json EvalEvent::ToJson() const {
  return json{{"step", Optional(step)},
              {"checkpoint", checkpoint},
              {"mode", mode},
              {"metrics",
               {{"loss", Number(loss)},
                {"loss_video", Number(loss_video)},
                {"loss_action", Number(loss_action)}}},
              {"episodes", episodes},
              {"valid_frames", valid_frames},
              {"seconds", Number(seconds)},
              {"config_hash", config_hash},
              {"job_id", job_id}};
}

EvalEvent EvalEvent::FromJson(const json& j) {
  EvalEvent e;
  e.step = OptInt(j, "step");
  e.checkpoint = Str(j, "checkpoint");
  e.mode = Str(j, "mode");
  auto m = j.find("metrics");
  if (m != j.end() && m->is_object()) {
    e.loss = Num(*m, "loss");
    e.loss_video = Num(*m, "loss_video");
    e.loss_action = Num(*m, "loss_action");
  }
  e.episodes = Int(j, "episodes");
  e.valid_frames = Int(j, "valid_frames");
  e.seconds = Num(j, "seconds");
  e.config_hash = Str(j, "config_hash");
  e.job_id = Str(j, "job_id");
  return e;
}

json SegmentEndEvent::ToJson() const {
  json j{{"step", Optional(step)},
         {"reason", reason},
         {"signal", signal ? json(Name(*signal)) : json(nullptr)},
         {"exit_code", Optional(exit_code)}};
  if (rank) j["rank"] = *rank;
  if (!message.empty()) j["message"] = message;
  return j;
}

SegmentEndEvent SegmentEndEvent::FromJson(const json& j) {
  SegmentEndEvent e;
  e.step = OptInt(j, "step");
  e.reason = Str(j, "reason");
  if (const std::optional<std::string> word = OptStr(j, "signal")) e.signal = Find<Signal>(*word);
  e.exit_code = OptInt(j, "exit_code");
  e.rank = OptInt(j, "rank");
  e.message = Str(j, "message");
  return e;
}

json AttemptStartEvent::ToJson() const {
  return json{{"job_id", job_id},
              {"restart_count", restart_count},
              {"nodes", nodes},
              {"checkpoint", Optional(checkpoint)},
              {"mode", mode},
              {"step0", Optional(step0)},
              {"resume_warmup_steps", resume_warmup_steps},
              {"skipped_checkpoints", skipped_checkpoints},
              {"in_job_seq", in_job_seq},
              {"restart_cause", restart_cause}};
}

AttemptStartEvent AttemptStartEvent::FromJson(const json& j) {
  AttemptStartEvent e;
  e.job_id = Str(j, "job_id");
  e.restart_count = Int(j, "restart_count");
  e.nodes = Str(j, "nodes");
  e.checkpoint = OptStr(j, "checkpoint");
  e.mode = Str(j, "mode");
  e.step0 = OptInt(j, "step0");
  e.resume_warmup_steps = Int(j, "resume_warmup_steps");
  e.skipped_checkpoints = Strings(j, "skipped_checkpoints");
  e.in_job_seq = Int(j, "in_job_seq");
  e.restart_cause = Str(j, "restart_cause");
  return e;
}

json AttemptEndEvent::ToJson() const {
  json j{{"job_id", job_id},
         {"restart_count", restart_count},
         {"exit_code", Optional(exit_code)},
         {"action", action},
         {"reason", reason},
         {"in_job_seq", in_job_seq}};
  if (hang_detected_at) {
    j["hang_last_heartbeat_at"] = Optional(hang_last_heartbeat_at);
    j["hang_detected_at"] = *hang_detected_at;
    j["hang_stale_ranks"] = hang_stale_ranks;
    j["hang_stack"] = hang_stack;
  }
  return j;
}

AttemptEndEvent AttemptEndEvent::FromJson(const json& j) {
  AttemptEndEvent e;
  e.job_id = Str(j, "job_id");
  e.restart_count = Int(j, "restart_count");
  e.exit_code = OptInt(j, "exit_code");
  e.action = Str(j, "action");
  e.reason = Str(j, "reason");
  e.in_job_seq = Int(j, "in_job_seq");
  const double last = Num(j, "hang_last_heartbeat_at"), at = Num(j, "hang_detected_at");
  if (std::isfinite(last)) e.hang_last_heartbeat_at = last;
  if (std::isfinite(at)) e.hang_detected_at = at;
  e.hang_stale_ranks = Str(j, "hang_stale_ranks");
  e.hang_stack = Str(j, "hang_stack");
  return e;
}

}  // namespace baton
