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

// ---- How one field moves between a record and its JSON, by the field's type. ----

json Value(double v) { return Number(v); }
json Value(int64_t v) { return json(v); }
json Value(bool v) { return json(v); }
json Value(const std::string& v) { return json(v); }
json Value(const std::vector<std::string>& v) { return json(v); }
json Value(const std::optional<int64_t>& v) { return Optional(v); }
json Value(const std::optional<double>& v) { return Optional(v); }
json Value(const std::optional<std::string>& v) { return Optional(v); }
json Value(const std::optional<Signal>& v) { return v ? json(Name(*v)) : json(nullptr); }

void Read(const json& j, const char* key, double* v) { *v = Num(j, key); }
void Read(const json& j, const char* key, int64_t* v) { *v = Int(j, key); }
void Read(const json& j, const char* key, bool* v) { *v = Bool(j, key); }
void Read(const json& j, const char* key, std::string* v) { *v = Str(j, key); }
void Read(const json& j, const char* key, std::vector<std::string>* v) { *v = Strings(j, key); }
void Read(const json& j, const char* key, std::optional<int64_t>* v) { *v = OptInt(j, key); }
void Read(const json& j, const char* key, std::optional<std::string>* v) { *v = OptStr(j, key); }
void Read(const json& j, const char* key, std::optional<double>* v) {
  const double x = Num(j, key);
  *v = std::isfinite(x) ? std::optional<double>(x) : std::nullopt;
}
// A word this build does not know is no signal.
void Read(const json& j, const char* key, std::optional<Signal>* v) {
  const std::optional<std::string> word = OptStr(j, key);
  *v = word ? Find<Signal>(*word) : std::nullopt;
}

// Whether a field counts as set, for the keys written only then.
bool IsSet(bool v) { return v; }
bool IsSet(const std::string& v) { return !v.empty(); }
template <class T>
bool IsSet(const std::optional<T>& v) {
  return v.has_value();
}

// ---- Per-key rules a table may add after the field. ----

// The key is written only when the record's `field` is set (the key's own field, or the one its
// group hangs on); with `on_read` it is also read only then, so `field` must come first in the
// table.
template <class R, class G>
struct Guard {
  G R::*field;
  bool on_read;
};
template <class R, class G>
Guard<R, G> WrittenWhenSet(G R::*field) {
  return {field, false};
}
template <class R, class G>
Guard<R, G> OnlyWhenSet(G R::*field) {
  return {field, true};
}
// An optional count written as 0 when unset, read back as it is (unset stays unset).
struct ZeroWhenUnset {};

// ---- The two walks over a table: record to JSON, and JSON to record. ----

template <class R>
class JsonWriter {
 public:
  JsonWriter(const R& r, json* j) : r_(r), j_(j) {}
  template <class T>
  void operator()(const char* key, T R::*m) const {
    (*j_)[key] = Value(r_.*m);
  }
  template <class T, class G>
  void operator()(const char* key, T R::*m, Guard<R, G> rule) const {
    if (IsSet(r_.*rule.field)) (*this)(key, m);
  }
  void operator()(const char* key, std::optional<int64_t> R::*m, ZeroWhenUnset) const {
    (*j_)[key] = (r_.*m).value_or(0);
  }
  // A nested object, always written, with the keys of `table`.
  template <class Table>
  void Object(const char* key, Table table) const {
    json inner = json::object();
    JsonWriter nested(r_, &inner);
    table(nested);
    (*j_)[key] = std::move(inner);
  }

 private:
  const R& r_;
  json* j_;
};

template <class R>
class JsonReader {
 public:
  JsonReader(const json& j, R* r) : j_(j), r_(r) {}
  template <class T>
  void operator()(const char* key, T R::*m) const {
    Read(j_, key, &(r_->*m));
  }
  template <class T, class G>
  void operator()(const char* key, T R::*m, Guard<R, G> rule) const {
    if (!rule.on_read || IsSet(r_->*rule.field)) (*this)(key, m);
  }
  template <class T>
  void operator()(const char* key, T R::*m, ZeroWhenUnset) const {
    (*this)(key, m);
  }
  // A nested object that is missing or not an object leaves its fields at their defaults.
  template <class Table>
  void Object(const char* key, Table table) const {
    auto it = j_.find(key);
    if (it == j_.end() || !it->is_object()) return;
    JsonReader nested(*it, r_);
    table(nested);
  }

 private:
  const json& j_;
  R* r_;
};

template <class R, class Table>
json Write(const R& r, Table table) {
  json j = json::object();
  JsonWriter<R> writer(r, &j);
  table(writer);
  return j;
}

template <class R, class Table>
R Read(const json& j, Table table) {
  R r;
  JsonReader<R> reader(j, &r);
  table(reader);
  return r;
}

// ---- Each record's keys, once: the key, the field, and a rule where it has one. ----

template <class K>
void SegmentStartKeys(K& key) {
  using E = SegmentStartEvent;
  key("mode", &E::mode);
  key("step0", &E::step0);
  key("target_steps", &E::target_steps);
  key("resume_warmup_steps", &E::resume_warmup_steps, ZeroWhenUnset{});
  key("warmup_until", &E::warmup_until);
  key("checkpoint", &E::checkpoint);
  key("init_from", &E::init_from);
  key("skipped", &E::skipped);
  key("world_size", &E::world_size);
  key("load_seconds", &E::load_seconds);
  key("config_hash", &E::config_hash);
  key("job_id", &E::job_id);
  key("restart_count", &E::restart_count);
}

// The nonfinite group is written only for a step that was not applied; its episodes are also
// read only then.
template <class K>
void StepKeys(K& key) {
  using E = StepEvent;
  key("step", &E::step);
  key("lr", &E::lr);
  key("loss", &E::loss);
  key("loss_video", &E::loss_video);
  key("loss_action", &E::loss_action);
  key("grad_norm", &E::grad_norm);
  key("tokens", &E::tokens);
  key("padded_tokens", &E::padded_tokens);
  key("samples", &E::samples);
  key("valid_frames", &E::valid_frames);
  key("padded_frames", &E::padded_frames);
  key("step_time_s", &E::step_time_s);
  key("tokens_per_s", &E::tokens_per_s);
  key("in_warmup", &E::in_warmup);
  key("epoch", &E::epoch);
  key("nonfinite", &E::nonfinite, WrittenWhenSet(&E::nonfinite));
  key("nonfinite_episodes", &E::nonfinite_episodes, OnlyWhenSet(&E::nonfinite));
  key("consecutive_nonfinite", &E::consecutive_nonfinite, WrittenWhenSet(&E::nonfinite));
}

template <class K>
void MicrostepKeys(K& key) {
  using E = MicrostepEvent;
  key("step", &E::step);
  key("micro", &E::micro);
  key("tokens", &E::tokens);
  key("fwd_bwd_s", &E::fwd_bwd_s);
  key("peak_bytes", &E::peak_bytes);
}

template <class K>
void CheckpointKeys(K& key) {
  using E = CheckpointEvent;
  key("step", &E::step);
  key("path", &E::path);
  key("bytes", &E::bytes);
  key("seconds", &E::seconds);
  key("reason", &E::reason);
}

template <class K>
void EvalMetricKeys(K& key) {
  using E = EvalEvent;
  key("loss", &E::loss);
  key("loss_video", &E::loss_video);
  key("loss_action", &E::loss_action);
}

template <class K>
void EvalKeys(K& key) {
  using E = EvalEvent;
  key("step", &E::step);
  key("checkpoint", &E::checkpoint);
  key("mode", &E::mode);
  key.Object("metrics", [](auto& metric) { EvalMetricKeys(metric); });
  key("episodes", &E::episodes);
  key("valid_frames", &E::valid_frames);
  key("seconds", &E::seconds);
  key("config_hash", &E::config_hash);
  key("job_id", &E::job_id);
}

template <class K>
void SegmentEndKeys(K& key) {
  using E = SegmentEndEvent;
  key("step", &E::step);
  key("reason", &E::reason);
  key("signal", &E::signal);
  key("exit_code", &E::exit_code);
  key("rank", &E::rank, WrittenWhenSet(&E::rank));
  key("message", &E::message, WrittenWhenSet(&E::message));
}

template <class K>
void AttemptStartKeys(K& key) {
  using E = AttemptStartEvent;
  key("job_id", &E::job_id);
  key("restart_count", &E::restart_count);
  key("nodes", &E::nodes);
  key("checkpoint", &E::checkpoint);
  key("mode", &E::mode);
  key("step0", &E::step0);
  key("resume_warmup_steps", &E::resume_warmup_steps);
  key("skipped_checkpoints", &E::skipped_checkpoints);
  key("in_job_seq", &E::in_job_seq);
  key("restart_cause", &E::restart_cause);
}

// The hang group is written only for an attempt the launcher declared hung; each of its keys is
// read on its own.
template <class K>
void AttemptEndKeys(K& key) {
  using E = AttemptEndEvent;
  key("job_id", &E::job_id);
  key("restart_count", &E::restart_count);
  key("exit_code", &E::exit_code);
  key("action", &E::action);
  key("reason", &E::reason);
  key("in_job_seq", &E::in_job_seq);
  key("hang_last_heartbeat_at", &E::hang_last_heartbeat_at, WrittenWhenSet(&E::hang_detected_at));
  key("hang_detected_at", &E::hang_detected_at, WrittenWhenSet(&E::hang_detected_at));
  key("hang_stale_ranks", &E::hang_stale_ranks, WrittenWhenSet(&E::hang_detected_at));
  key("hang_stack", &E::hang_stack, WrittenWhenSet(&E::hang_detected_at));
}

}  // namespace

json SegmentStartEvent::ToJson() const {
  return Write(*this, [](auto& key) { SegmentStartKeys(key); });
}
SegmentStartEvent SegmentStartEvent::FromJson(const json& j) {
  return Read<SegmentStartEvent>(j, [](auto& key) { SegmentStartKeys(key); });
}

json StepEvent::ToJson() const {
  return Write(*this, [](auto& key) { StepKeys(key); });
}
StepEvent StepEvent::FromJson(const json& j) {
  return Read<StepEvent>(j, [](auto& key) { StepKeys(key); });
}

json MicrostepEvent::ToJson() const {
  return Write(*this, [](auto& key) { MicrostepKeys(key); });
}
MicrostepEvent MicrostepEvent::FromJson(const json& j) {
  return Read<MicrostepEvent>(j, [](auto& key) { MicrostepKeys(key); });
}

json CheckpointEvent::ToJson() const {
  return Write(*this, [](auto& key) { CheckpointKeys(key); });
}
CheckpointEvent CheckpointEvent::FromJson(const json& j) {
  return Read<CheckpointEvent>(j, [](auto& key) { CheckpointKeys(key); });
}

json EvalEvent::ToJson() const {
  return Write(*this, [](auto& key) { EvalKeys(key); });
}
EvalEvent EvalEvent::FromJson(const json& j) {
  return Read<EvalEvent>(j, [](auto& key) { EvalKeys(key); });
}

json SegmentEndEvent::ToJson() const {
  return Write(*this, [](auto& key) { SegmentEndKeys(key); });
}
SegmentEndEvent SegmentEndEvent::FromJson(const json& j) {
  return Read<SegmentEndEvent>(j, [](auto& key) { SegmentEndKeys(key); });
}

json AttemptStartEvent::ToJson() const {
  return Write(*this, [](auto& key) { AttemptStartKeys(key); });
}
AttemptStartEvent AttemptStartEvent::FromJson(const json& j) {
  return Read<AttemptStartEvent>(j, [](auto& key) { AttemptStartKeys(key); });
}

json AttemptEndEvent::ToJson() const {
  return Write(*this, [](auto& key) { AttemptEndKeys(key); });
}
AttemptEndEvent AttemptEndEvent::FromJson(const json& j) {
  return Read<AttemptEndEvent>(j, [](auto& key) { AttemptEndKeys(key); });
}

}  // namespace baton
