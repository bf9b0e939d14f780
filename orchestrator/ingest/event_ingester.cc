#include "orchestrator/ingest/event_ingester.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "orchestrator/ingest/events_file_reads.h"
#include "orchestrator/store/step_event_fields.h"
#include "orchestrator/store/store_evals.h"
#include "orchestrator/store/time_bucket_store.h"
#include "orchestrator/store/utf8_cut.h"
#include "schema/clock.h"
#include "schema/event_records.h"
#include "schema/events.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace baton {

namespace {

// The text at `key`; `fallback` when it is missing or not a string.
std::string StrOr(const json& j, const char* key, const std::string& fallback = "") {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

// The record's time: when it was written, else now (a record from a writer that left it out,
// or wrote null). A time outside [0, kMaxEventTime] is no clock's reading: the record is a bad
// line, so no duration is ever computed from it.
Result<double> RecordTime(const json& j) {
  auto it = j.find("time");
  if (it == j.end() || it->is_null()) return UnixTimeNow();
  if (!it->is_number()) return Status::Data("\"time\" is not a number");
  const double t = it->get<double>();
  if (!(t >= 0 && t <= kMaxEventTime)) {
    return Status::Data("\"time\" " + it->dump() +
                        " is not a plausible Unix time (0 to 4102444800, the year 2100)");
  }
  return t;
}

// Step rows held back and written together (bounds the memory of a chunk of only steps).
constexpr size_t kStepsPerFlush = 4096;

// Applies one record of the file's attempt. Returns kData for a record that is not usable
// (the caller counts it as a bad line); any other failure aborts the chunk.
class RecordApplier {
 public:
  RecordApplier(Store& store, const RunRecord& run, std::string job_id, int64_t restart,
                int64_t in_job_seq)
      : store_(store),
        run_(run),
        job_id_(std::move(job_id)),
        restart_(restart),
        in_job_seq_(in_job_seq) {}

  // The cached attempt id is only valid inside one transaction (a rollback may undo the insert).
  void ForgetAttempt() {
    attempt_id_ = 0;
    steps_.clear();
  }

  // Writes the step rows held back so far (Store::InsertStepsInTx: a few statements for many
  // rows). Called before any other record, which may read what they write (an attempt's
  // last_step), and before the chunk's cursor moves.
  Status FlushSteps() {
    if (steps_.empty()) return Status::Ok();
    Status st = store_.InsertStepsInTx(steps_);
    steps_.clear();
    // No line to blame: a failed batch fails the chunk, never one record as a bad line.
    if (st.code() == Code::kData) return Status::Internal("step rows: " + st.message());
    return st;
  }

  // The attempt's `eval` time bucket: what this eval took, ending at the record's time. Each
  // record is applied once (the cursor moves in the same transaction), so summing is exact.
  Status AddInlineEvalTime(int64_t attempt_id, const EvalEvent& e, double time) {
    if (!std::isfinite(e.seconds) || e.seconds < 0) return Status::Ok();
    BATON_ASSIGN_OR_RETURN(AttemptRecord a, store_.GetAttempt(attempt_id));
    a.eval_s += e.seconds;
    ++a.evals;
    const double start = time - e.seconds;
    if (!a.first_eval_start || start < *a.first_eval_start) a.first_eval_start = start;
    if (!a.last_eval_end || time > *a.last_eval_end) a.last_eval_end = time;
    return store_.UpdateAttemptInTx(a);
  }

  Status Apply(const json& r, bool* was_step) {
    *was_step = false;
    if (!r.is_object()) return Status::Data("not a JSON object");
    const std::string type = StrOr(r, "type");
    if (type.empty()) return Status::Data("no \"type\"");
    BATON_ASSIGN_OR_RETURN(const double time, RecordTime(r));
    BATON_ASSIGN_OR_RETURN(const int64_t attempt_id, AttemptId());
    if (type == event_type::kStep) return ApplyStep(r, attempt_id, time, was_step);
    BATON_RETURN_IF_ERROR(FlushSteps());
    if (type == event_type::kMicrostep) return ApplyMicrostep(r, attempt_id);
    if (type == event_type::kCheckpoint) return ApplyCheckpoint(r, attempt_id, time);
    if (type == EvalEvent::kType) return ApplyEval(r, attempt_id, time);
    // The rest update the attempt itself.
    BATON_ASSIGN_OR_RETURN(AttemptRecord a, store_.GetAttempt(attempt_id));
    if (type == event_type::kAttemptStart) return ApplyAttemptStart(r, a, time);
    if (type == event_type::kSegmentStart) return ApplySegmentStart(r, a, time);
    if (type == event_type::kSegmentEnd) return ApplySegmentEnd(r, a);
    if (type == event_type::kAttemptEnd) return ApplyAttemptEnd(r, a, time);
    return Status::Data("unknown record type '" + type + "'");
  }

 private:
  // One apply per record type: `attempt_id` or `a` is the file's attempt, `time` the record's.
  Status ApplyStep(const json& r, int64_t attempt_id, double time, bool* was_step) {
    const StepEvent e = StepEvent::FromJson(r);
    if (!e.step) return Status::Data("step without a valid \"step\"");
    const StepRecord s = StepRecordOf(e, run_.id, attempt_id, time);
    *was_step = true;
    steps_.push_back(s);
    return steps_.size() < kStepsPerFlush ? Status::Ok() : FlushSteps();
  }

  Status ApplyMicrostep(const json& r, int64_t attempt_id) {
    const MicrostepEvent e = MicrostepEvent::FromJson(r);
    MicrostepRecord m;
    m.run_id = run_.id;
    m.attempt_id = attempt_id;
    m.step = e.step;
    m.micro = e.micro;
    m.tokens = e.tokens;
    m.fwd_bwd_s = e.fwd_bwd_s;
    m.peak_bytes = e.peak_bytes;
    return store_.InsertMicrostepInTx(m);
  }

  Status ApplyCheckpoint(const json& r, int64_t attempt_id, double time) {
    const CheckpointEvent e = CheckpointEvent::FromJson(r);
    if (!e.step || *e.step < 0) return Status::Data("checkpoint without \"step\"");
    CheckpointRecord c;
    c.run_id = run_.id;
    c.attempt_id = attempt_id;
    c.step = *e.step;
    c.path = e.path;
    c.bytes = e.bytes;
    c.seconds = e.seconds;
    c.reason = e.reason;
    c.time = time;
    return store_.UpsertCheckpointInTx(c);
  }

  Status ApplyEval(const json& r, int64_t attempt_id, double time) {
    const EvalEvent e = EvalEvent::FromJson(r);
    if (!e.step || *e.step < 0) return Status::Data("eval without \"step\"");
    BATON_RETURN_IF_ERROR(
        UpsertEvalInTx(store_, EvalRecordOf(e, run_.id, kEvalFromEvent, UnixTimeNow())));
    return AddInlineEvalTime(attempt_id, e, time);
  }

  Status ApplyAttemptStart(const json& r, AttemptRecord& a, double time) {
    const AttemptStartEvent e = AttemptStartEvent::FromJson(r);
    if (!e.nodes.empty()) a.nodes = e.nodes;
    a.started_at = time;
    a.checkpoint = e.checkpoint.value_or("");
    if (!e.mode.empty()) a.resume_mode = e.mode;
    a.step0 = e.step0;
    a.resume_warmup_steps = e.resume_warmup_steps;
    if (!e.restart_cause.empty()) a.restart_cause = e.restart_cause;
    BATON_RETURN_IF_ERROR(store_.UpdateAttemptInTx(a));
    return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kRunning, "", time);
  }

  Status ApplySegmentStart(const json& r, AttemptRecord& a, double time) {
    const SegmentStartEvent e = SegmentStartEvent::FromJson(r);
    if (!a.started_at) a.started_at = time;
    if (!e.mode.empty()) a.resume_mode = e.mode;
    if (e.step0) a.step0 = e.step0;
    if (e.checkpoint) a.checkpoint = *e.checkpoint;
    if (e.resume_warmup_steps) a.resume_warmup_steps = *e.resume_warmup_steps;
    a.warmup_until = e.warmup_until;
    a.world_size = e.world_size;
    if (!e.config_hash.empty()) a.config_hash = e.config_hash;
    a.init_from = e.init_from;
    BATON_RETURN_IF_ERROR(store_.UpdateAttemptInTx(a));
    return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kRunning, "", time);
  }

  Status ApplySegmentEnd(const json& r, AttemptRecord& a) {
    const SegmentEndEvent e = SegmentEndEvent::FromJson(r);
    // Both count finished steps.
    if (e.step && (!a.last_step || *a.last_step < *e.step)) a.last_step = e.step;
    // The first segment_end of an attempt says how it ended. When a rank fails, the others may
    // follow with errors of their own (a lost peer): those come later and are not why.
    if (a.trainer_end_reason.empty()) {
      a.trainer_end_reason = e.reason.empty() ? "?" : e.reason;
      a.trainer_message = CutUtf8(e.message, kMaxTrainerMessageBytes, CutKeep::kStart, "…");
      a.trainer_exit_code = e.exit_code;
      a.trainer_signal = e.signal;
    }
    return store_.UpdateAttemptInTx(a);
  }

  Status ApplyAttemptEnd(const json& r, AttemptRecord& a, double time) {
    const AttemptEndEvent e = AttemptEndEvent::FromJson(r);
    a.ended_at = time;
    a.exit_code = e.exit_code;
    a.action = e.action;
    a.end_reason = e.reason;
    if (e.hang_detected_at) {
      a.hang_detected_at = e.hang_detected_at;
      a.hang_last_heartbeat_at = e.hang_last_heartbeat_at;
      a.hang_stale_ranks = e.hang_stale_ranks;
      a.hang_stack = CutUtf8(e.hang_stack, kMaxHangStackBytes, CutKeep::kStart, "…");
    }
    BATON_RETURN_IF_ERROR(store_.UpdateAttemptInTx(a));
    return SetRunStatusAfterEnd(a, time);
  }

  // The run's status from the launcher's action on the attempt that just ended.
  Status SetRunStatusAfterEnd(const AttemptRecord& a, double time) {
    const std::string at_step =
        a.last_step ? " at step " + std::to_string(*a.last_step) : std::string();
    // The trainer's own words, so `baton ls` and the runs page say why without a click.
    const std::string why = a.trainer_message.empty() ? "" : ": " + a.trainer_message;
    if (a.action == Name(ExitAction::kDone)) {
      return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kCompleted, "", time);
    }
    if (a.end_reason == Name(AttemptEndReason::kCancelled)) {
      return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kCancelled,
                                           Name(AttemptEndReason::kCancelled), time);
    }
    if (a.action == Name(ExitAction::kFail)) {
      return store_.SetActiveRunStatusInTx(
          run_.id, RunStatus::kFailed,
          a.end_reason + at_step + " (exit code " +
              (a.exit_code ? std::to_string(*a.exit_code) : std::string("?")) + ")" + why,
          time);
    }
    if (a.action == Name(ExitAction::kRequeue)) {
      return store_.SetActiveRunStatusInTx(run_.id, RunStatus::kRequeued,
                                           a.end_reason + at_step + why, time);
    }
    return Status::Ok();
  }

  Result<int64_t> AttemptId() {
    if (attempt_id_ > 0) return attempt_id_;
    Result<int64_t> id =
        store_.EnsureAttemptInTx(run_.id, job_id_, restart_, in_job_seq_, run_.cluster);
    if (id.ok()) attempt_id_ = *id;
    return id;
  }

  Store& store_;
  const RunRecord& run_;
  std::string job_id_;
  int64_t restart_;
  int64_t in_job_seq_;
  int64_t attempt_id_ = 0;         // valid within one transaction (a rollback may undo the insert)
  std::vector<StepRecord> steps_;  // step rows not yet written, of this chunk
};

// A line longer than a chunk at `cursor`: no record is that long (a step is well under 1 KiB, a
// trainer message is cut at kMaxTrainerMessageBytes). Its end is found in small reads, without
// the line in memory and without the write lock (the caller rolled its transaction back), and the
// line is skipped as a bad line. False when it is still being written: skipped once complete.
Result<bool> SkipLongLine(Store& store, const RunRecord& run, std::ifstream& in,
                          const std::string& path, int64_t cursor, int64_t chunk_bytes,
                          IngestStats* stats) {
  BATON_ASSIGN_OR_RETURN(const int64_t line_end, FindLineEnd(in, path, cursor + chunk_bytes));
  if (line_end < 0) return false;
  BATON_ASSIGN_OR_RETURN(Transaction skip_tx, store.BeginForRun(run.id));
  BATON_ASSIGN_OR_RETURN(const int64_t now_at, store.CursorInTx(path));
  if (now_at != cursor) return true;  // another process moved on meanwhile
  BATON_RETURN_IF_ERROR(store.SetCursorInTx(path, run.id, line_end, 1, UnixTimeNow()));
  BATON_RETURN_IF_ERROR(skip_tx.Commit());
  stats->warnings.push_back(path + ":" + std::to_string(cursor) + ": skipped: a line of " +
                            std::to_string(line_end - cursor) + " bytes, longer than " +
                            std::to_string(chunk_bytes) + " (no event record is that long)");
  stats->bytes += line_end - cursor;
  ++stats->bad_lines;
  return true;
}

// One complete line: kData when it is not a usable record (the caller counts it as bad).
Status ApplyLine(RecordApplier& applier, std::string_view line, bool* was_step) {
  json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (record.is_discarded()) return Status::Data("not valid JSON");
  try {
    return applier.Apply(record, was_step);
  } catch (const json::exception& e) {
    return Status::Data(std::string("bad field: ") + e.what());
  }
}

// The complete lines of `chunk` (it ends with '\n'), which starts at byte `cursor` of the file,
// inside the chunk's open transaction; the number of bad lines among them.
Result<int64_t> ApplyLines(RecordApplier& applier, std::string_view chunk, int64_t cursor,
                           const std::string& path, const IngestOptions& options,
                           IngestStats* stats) {
  int64_t bad = 0;
  int64_t in_chunk = 0;
  size_t pos = 0;
  while (pos < chunk.size()) {
    const size_t nl = chunk.find('\n', pos);
    const std::string_view line = chunk.substr(pos, nl - pos);
    const int64_t line_offset = cursor + static_cast<int64_t>(pos);
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    bool was_step = false;
    const Status st = ApplyLine(applier, line, &was_step);
    if (st.code() == Code::kData) {
      ++bad;
      stats->warnings.push_back(path + ":" + std::to_string(line_offset) +
                                ": skipped: " + st.message());
      continue;
    }
    BATON_RETURN_IF_ERROR(st);
    ++stats->records;
    if (was_step) ++stats->steps;
    ++in_chunk;
    if (options.after_record) options.after_record(in_chunk);
  }
  return bad;
}

}  // namespace

void IngestStats::Add(const IngestStats& o) {
  files += o.files;
  records += o.records;
  steps += o.steps;
  bad_lines += o.bad_lines;
  bytes += o.bytes;
  warnings.insert(warnings.end(), o.warnings.begin(), o.warnings.end());
}

Result<IngestStats> IngestFile(Store& store, const RunRecord& run, const std::string& path,
                               const IngestOptions& options) {
  IngestStats stats;
  stats.files = 1;
  std::string job_id;
  int64_t restart = 0, in_job_seq = 0;
  if (!ParseEventsFileName(fs::path(path).filename().string(), &job_id, &restart, &in_job_seq)) {
    return Status::Internal(path + ": not an events file name");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Io(path + ": cannot open for reading");
  RecordApplier applier(store, run, job_id, restart, in_job_seq);
  const int64_t chunk_bytes = std::max<int64_t>(options.chunk_bytes, 4096);
  std::string buf;
  while (true) {
    // One chunk per transaction: its rows and the cursor past it commit together.
    BATON_ASSIGN_OR_RETURN(Transaction tx, store.BeginForRun(run.id));
    applier.ForgetAttempt();
    BATON_ASSIGN_OR_RETURN(const int64_t cursor, store.CursorInTx(path));
    ReadChunk(in, cursor, chunk_bytes, &buf);
    const size_t end = buf.rfind('\n');
    if (end == std::string::npos) {
      if (static_cast<int64_t>(buf.size()) < chunk_bytes) return stats;  // a torn last line
      tx.Rollback();
      BATON_ASSIGN_OR_RETURN(const bool more,
                             SkipLongLine(store, run, in, path, cursor, chunk_bytes, &stats));
      if (!more) return stats;
      continue;
    }
    const std::string_view chunk(buf.data(), end + 1);
    BATON_ASSIGN_OR_RETURN(const int64_t bad,
                           ApplyLines(applier, chunk, cursor, path, options, &stats));
    BATON_RETURN_IF_ERROR(applier.FlushSteps());
    const int64_t consumed = static_cast<int64_t>(end) + 1;
    BATON_RETURN_IF_ERROR(store.SetCursorInTx(path, run.id, cursor + consumed, bad, UnixTimeNow()));
    BATON_RETURN_IF_ERROR(tx.Commit());
    stats.bytes += consumed;
    stats.bad_lines += bad;
  }
}

Result<IngestStats> IngestRun(Store& store, const RunRecord& run, const IngestOptions& options) {
  IngestStats total;
  for (const std::string& path : RunFolder{run.run_dir}.ListEventFiles()) {
    Result<IngestStats> s = IngestFile(store, run, path, options);
    if (!s.ok()) return s.status();
    total.Add(*s);
  }
  // Where the run's time went follows its records (time_bucket_store.h).
  if (total.records > 0 && options.refresh_time_buckets) {
    BATON_ASSIGN_OR_RETURN(const RunRecord fresh, store.GetRun(run.id));
    BATON_RETURN_IF_ERROR(RefreshTimeBuckets(store, fresh, UnixTimeNow()));
  }
  return total;
}

}  // namespace baton
