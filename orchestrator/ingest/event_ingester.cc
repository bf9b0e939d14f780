#include "orchestrator/ingest/event_ingester.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "schema/events.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace baton {

namespace {

bool AllDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Numeric-aware "less": "9" < "10"; non-numeric ids compare as text after numeric ones.
bool JobIdLess(const std::string& a, const std::string& b) {
  const bool na = AllDigits(a), nb = AllDigits(b);
  if (na != nb) return na;
  if (na && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

// A number field, or `fallback` when absent, null (how the trainer's JSON writer spells NaN and
// Inf), not a number, or not finite (a literal like 1e999): no NaN or Inf ever reaches the
// store, and from there the JSON the CLI and the API print.
double NumOr(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  const double v = it->get<double>();
  return std::isfinite(v) ? v : fallback;
}

// An integer field; none when absent, not a number, or outside int64 (converting a float beyond
// that range would be undefined behaviour, and a wrapped value would be a wrong step).
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

int64_t IntOr(const json& j, const char* key, int64_t fallback) {
  return OptInt(j, key).value_or(fallback);
}

std::string StrOr(const json& j, const char* key, const std::string& fallback = "") {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

bool BoolOr(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

// The episode ids of a non-finite step: strings as written, numbers as their text (an index
// instead of a name is still worth showing), anything else skipped.
std::vector<std::string> EpisodeIds(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const json& id : *it) {
    if (id.is_string()) {
      out.push_back(id.get<std::string>());
    } else if (id.is_number_integer()) {
      out.push_back(id.dump());
    }
  }
  return out;
}

// `text` cut to at most `max_bytes` without splitting a UTF-8 sequence (the parser only hands
// out valid UTF-8, and the JSON writers that print it later refuse a broken one), marked "…".
std::string CutUtf8(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "…";
}

// Applies one record of the file's attempt. Returns kData for a record that is not usable
// (the caller counts it as a bad line); any other failure aborts the chunk.
class RecordApplier {
 public:
  RecordApplier(Store& store, const RunRecord& run, std::string job_id, int64_t restart)
      : store_(store), run_(run), job_id_(std::move(job_id)), restart_(restart) {}

  // The cached attempt id is only valid inside one transaction (a rollback may undo the insert).
  void ForgetAttempt() { attempt_id_ = 0; }

  Status Apply(const json& r, bool* was_step) {
    *was_step = false;
    if (!r.is_object()) return Status::Data("not a JSON object");
    const std::string type = StrOr(r, "type");
    if (type.empty()) return Status::Data("no \"type\"");
    const double time = NumOr(r, "time", UnixTimeNow());
    Result<int64_t> attempt_id = AttemptId();
    if (!attempt_id.ok()) return attempt_id.status();

    if (type == event_type::kStep) {
      if (!OptInt(r, "step")) return Status::Data("step without a valid \"step\"");
      StepRecord s;
      s.run_id = run_.id;
      s.attempt_id = *attempt_id;
      s.step = IntOr(r, "step", 0);
      s.time = time;
      s.lr = NumOr(r, "lr", kNoValue);
      s.loss = NumOr(r, "loss", kNoValue);
      s.loss_video = NumOr(r, "loss_video", kNoValue);
      s.loss_action = NumOr(r, "loss_action", kNoValue);
      s.grad_norm = NumOr(r, "grad_norm", kNoValue);
      s.tokens = IntOr(r, "tokens", 0);
      s.padded_tokens = IntOr(r, "padded_tokens", 0);
      s.samples = IntOr(r, "samples", 0);
      s.valid_frames = IntOr(r, "valid_frames", 0);
      s.padded_frames = IntOr(r, "padded_frames", 0);
      s.step_time_s = NumOr(r, "step_time_s", kNoValue);
      s.tokens_per_s = NumOr(r, "tokens_per_s", kNoValue);
      s.in_warmup = BoolOr(r, "in_warmup", false);
      s.epoch = IntOr(r, "epoch", 0);
      s.nonfinite = BoolOr(r, "nonfinite", false);
      if (s.nonfinite) s.nonfinite_episodes = EpisodeIds(r, "nonfinite_episodes");
      *was_step = true;
      return store_.InsertStepInTx(s);
    }
    if (type == event_type::kMicrostep) {
      MicrostepRecord m;
      m.run_id = run_.id;
      m.attempt_id = *attempt_id;
      m.step = IntOr(r, "step", 0);
      m.micro = IntOr(r, "micro", 0);
      m.tokens = IntOr(r, "tokens", 0);
      m.fwd_bwd_s = NumOr(r, "fwd_bwd_s", kNoValue);
      m.peak_bytes = IntOr(r, "peak_bytes", 0);
      return store_.InsertMicrostepInTx(m);
    }
    if (type == event_type::kCheckpoint) {
      CheckpointRecord c;
      c.run_id = run_.id;
      c.attempt_id = *attempt_id;
      c.step = IntOr(r, "step", -1);
      if (c.step < 0) return Status::Data("checkpoint without \"step\"");
      c.path = StrOr(r, "path");
      c.bytes = IntOr(r, "bytes", 0);
      c.seconds = NumOr(r, "seconds", kNoValue);
      c.reason = StrOr(r, "reason");
      c.time = time;
      return store_.UpsertCheckpointInTx(c);
    }

    Result<AttemptRecord> a = store_.GetAttempt(*attempt_id);
    if (!a.ok()) return a.status();
    if (type == event_type::kAttemptStart) {
      a->nodes = StrOr(r, "nodes", a->nodes);
      a->started_at = time;
      a->checkpoint = StrOr(r, "checkpoint");
      a->resume_mode = StrOr(r, "mode", a->resume_mode);
      a->step0 = OptInt(r, "step0");
      a->resume_warmup_steps = IntOr(r, "resume_warmup_steps", 0);
      BATON_RETURN_IF_ERROR(store_.UpdateAttemptInTx(*a));
      return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kRunning, "", time);
    }
    if (type == event_type::kSegmentStart) {
      if (!a->started_at) a->started_at = time;
      a->resume_mode = StrOr(r, "mode", a->resume_mode);
      if (auto s0 = OptInt(r, "step0")) a->step0 = s0;
      if (r.contains("checkpoint") && r["checkpoint"].is_string()) a->checkpoint = r["checkpoint"];
      a->resume_warmup_steps = IntOr(r, "resume_warmup_steps", a->resume_warmup_steps);
      a->warmup_until = OptInt(r, "warmup_until");
      a->world_size = OptInt(r, "world_size");
      a->config_hash = StrOr(r, "config_hash", a->config_hash);
      BATON_RETURN_IF_ERROR(store_.UpdateAttemptInTx(*a));
      return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kRunning, "", time);
    }
    if (type == event_type::kSegmentEnd) {
      if (auto step = OptInt(r, "step"); step && (!a->last_step || *a->last_step < *step)) {
        a->last_step = step;
      }
      // The first segment_end of an attempt says how it ended. When a rank fails, the others
      // may follow with errors of their own (a lost peer): those come later and are not why.
      if (a->trainer_end_reason.empty()) {
        a->trainer_end_reason = StrOr(r, "reason", "?");
        a->trainer_message = CutUtf8(StrOr(r, "message"), kMaxTrainerMessageBytes);
        a->trainer_exit_code = OptInt(r, "exit_code");
      }
      return store_.UpdateAttemptInTx(*a);
    }
    if (type == event_type::kAttemptEnd) {
      a->ended_at = time;
      a->exit_code = OptInt(r, "exit_code");
      a->action = StrOr(r, "action");
      a->end_reason = StrOr(r, "reason");
      BATON_RETURN_IF_ERROR(store_.UpdateAttemptInTx(*a));
      const std::string at_step =
          a->last_step ? " at step " + std::to_string(*a->last_step) : std::string();
      // The trainer's own words, so `baton ls` and the runs page say why without a click.
      const std::string why = a->trainer_message.empty() ? "" : ": " + a->trainer_message;
      if (a->action == "done") {
        return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kCompleted, "", time);
      }
      if (a->end_reason == "cancelled") {
        return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kCancelled, "cancelled", time);
      }
      if (a->action == "fail") {
        return store_.SetActiveRunStatusInTx(
            run_.id, RunStatus::kFailed,
            a->end_reason + at_step + " (exit code " +
                (a->exit_code ? std::to_string(*a->exit_code) : std::string("?")) + ")" + why,
            time);
      }
      if (a->action == "requeue") {
        return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kRequeued,
                                             a->end_reason + at_step + why, time);
      }
      return Status::Ok();
    }
    return Status::Data("unknown record type '" + type + "'");
  }

 private:
  Result<int64_t> AttemptId() {
    if (attempt_id_ > 0) return attempt_id_;
    Result<int64_t> id = store_.EnsureAttemptInTx(run_.id, job_id_, restart_);
    if (id.ok()) attempt_id_ = *id;
    return id;
  }

  Store& store_;
  const RunRecord& run_;
  std::string job_id_;
  int64_t restart_;
  int64_t attempt_id_ = 0;  // valid within one transaction (a rollback may undo the insert)
};

}  // namespace

void IngestStats::Add(const IngestStats& o) {
  files += o.files;
  records += o.records;
  steps += o.steps;
  bad_lines += o.bad_lines;
  bytes += o.bytes;
  warnings.insert(warnings.end(), o.warnings.begin(), o.warnings.end());
}

bool ParseEventsFileName(const std::string& file_name, std::string* job_id, int64_t* restart) {
  const std::string ext = ".jsonl";
  if (file_name.size() <= ext.size() ||
      file_name.compare(file_name.size() - ext.size(), ext.size(), ext) != 0) {
    return false;
  }
  const std::string stem = file_name.substr(0, file_name.size() - ext.size());
  const size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  const std::string r = stem.substr(dot + 1);
  if (!AllDigits(r) || r.size() > 9) return false;
  *job_id = stem.substr(0, dot);
  *restart = std::stoll(r);
  return true;
}

std::vector<std::string> ListEventFiles(const std::string& run_dir) {
  struct Entry {
    std::string path, job;
    int64_t restart;
  };
  std::vector<Entry> entries;
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(run_dir) / "events", ec);
  if (ec || !fs::is_directory(dir, ec)) return {};
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    Entry x;
    if (!ParseEventsFileName(e.path().filename().string(), &x.job, &x.restart)) continue;
    x.path = e.path().string();
    entries.push_back(std::move(x));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.job != b.job) return JobIdLess(a.job, b.job);
    return a.restart < b.restart;
  });
  std::vector<std::string> out;
  for (auto& e : entries) out.push_back(std::move(e.path));
  return out;
}

Result<IngestStats> IngestFile(Store& store, const RunRecord& run, const std::string& path,
                               const IngestOptions& options) {
  IngestStats stats;
  stats.files = 1;
  std::string job_id;
  int64_t restart = 0;
  if (!ParseEventsFileName(fs::path(path).filename().string(), &job_id, &restart)) {
    return Status::Internal(path + ": not an events file name");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Io(path + ": cannot open for reading");
  RecordApplier applier(store, run, job_id, restart);
  const int64_t chunk_bytes = std::max<int64_t>(options.chunk_bytes, 4096);
  std::string buf;
  while (true) {
    Result<Transaction> tx = store.Begin();
    if (!tx.ok()) return tx.status();
    applier.ForgetAttempt();
    Result<int64_t> cursor = store.CursorInTx(path);
    if (!cursor.ok()) return cursor.status();
    in.clear();
    in.seekg(*cursor);
    buf.assign(static_cast<size_t>(chunk_bytes), '\0');
    in.read(buf.data(), chunk_bytes);
    buf.resize(static_cast<size_t>(in.gcount()));
    size_t end = buf.rfind('\n');
    if (end == std::string::npos) {
      // Nothing complete. A single line longer than a chunk: read it whole.
      if (static_cast<int64_t>(buf.size()) < chunk_bytes) return stats;  // a torn last line
      std::string line;
      in.clear();
      in.seekg(*cursor);
      if (!std::getline(in, line) || in.eof()) return stats;  // still torn
      buf = line + "\n";
      end = buf.size() - 1;
    }
    int64_t bad = 0;
    int64_t in_chunk = 0;
    size_t pos = 0;
    while (pos <= end) {
      const size_t nl = buf.find('\n', pos);
      const std::string_view line(buf.data() + pos, nl - pos);
      const int64_t line_offset = *cursor + static_cast<int64_t>(pos);
      pos = nl + 1;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
      Status st;
      bool was_step = false;
      if (record.is_discarded()) {
        st = Status::Data("not valid JSON");
      } else {
        try {
          st = applier.Apply(record, &was_step);
        } catch (const json::exception& e) {
          st = Status::Data(std::string("bad field: ") + e.what());
        }
      }
      if (st.code() == Code::kData) {
        ++bad;
        stats.warnings.push_back(path + ":" + std::to_string(line_offset) +
                                 ": skipped: " + st.message());
        continue;
      }
      BATON_RETURN_IF_ERROR(st);
      ++stats.records;
      if (was_step) ++stats.steps;
      ++in_chunk;
      if (options.after_record) options.after_record(in_chunk);
    }
    const int64_t consumed = static_cast<int64_t>(end) + 1;
    BATON_RETURN_IF_ERROR(
        store.SetCursorInTx(path, run.id, *cursor + consumed, bad, UnixTimeNow()));
    BATON_RETURN_IF_ERROR(tx->Commit());
    stats.bytes += consumed;
    stats.bad_lines += bad;
  }
}

Result<IngestStats> IngestRun(Store& store, const RunRecord& run, const IngestOptions& options) {
  IngestStats total;
  for (const std::string& path : ListEventFiles(run.run_dir)) {
    Result<IngestStats> s = IngestFile(store, run, path, options);
    if (!s.ok()) return s.status();
    total.Add(*s);
  }
  return total;
}

}  // namespace baton
