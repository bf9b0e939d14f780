#include "orchestrator/store/record_columns.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace baton {

std::string OnConflictReplace(const std::string& keys, const std::string& columns) {
  auto split = [](const std::string& csv) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < csv.size()) {
      size_t comma = csv.find(',', start);
      if (comma == std::string::npos) comma = csv.size();
      std::string name = csv.substr(start, comma - start);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (!name.empty()) out.push_back(name);
      start = comma + 1;
    }
    return out;
  };
  const std::vector<std::string> key = split(keys);
  std::string sets;
  for (const std::string& c : split(columns)) {
    if (std::find(key.begin(), key.end(), c) != key.end()) continue;
    sets += (sets.empty() ? "" : ", ") + c + " = excluded." + c;
  }
  return " ON CONFLICT (" + keys + ") DO " + (sets.empty() ? "NOTHING" : "UPDATE SET " + sets);
}

void ReadColumn(const Statement& s, int col, RunStatus* v) {
  *v = Find<RunStatus>(s.Text(col)).value_or(RunStatus::kFailed);
}

void BindColumn(Statement& s, int param, RunStatus v) { s.Bind(param, Name(v)); }

// Never an error: one odd row must not hide a run's history.
void ReadColumn(const Statement& s, int col, std::vector<std::string>* v) {
  v->clear();
  const std::string text = s.Text(col);
  if (text.empty()) return;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return;
  for (const nlohmann::json& id : j) {
    if (id.is_string()) v->push_back(id.get<std::string>());
  }
}

// Encoding replaces invalid UTF-8 rather than failing: an id is only ever shown, never looked up.
void BindColumn(Statement& s, int param, const std::vector<std::string>& v) {
  if (v.empty()) {
    s.BindNull(param);
    return;
  }
  s.Bind(param, nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

const ColumnTable<RunRecord>& RunTable() {
  using R = RunRecord;
  static const std::vector<Column<R>> kColumns = {
      Col("id", &R::id, ColumnRole::kRowId),
      Col("name", &R::name),
      Col("status", &R::status),
      Col("reason", &R::reason),
      Col("config", &R::config),
      Col("config_source", &R::config_source),
      Col("run_dir", &R::run_dir),
      Col("target_steps", &R::target_steps),
      Col("max_restarts", &R::max_restarts),
      Col("max_failures", &R::max_failures),
      Col("job_id", &R::job_id),
      Col("created_at", &R::created_at),
      Col("updated_at", &R::updated_at),
      Col("partition", &R::partition),
      Col("owner", &R::owner),
      Col("cluster", &R::cluster),
  };
  static const ColumnTable<R> kTable("runs", kColumns);
  return kTable;
}

const ColumnTable<AttemptRecord>& AttemptTable() {
  using R = AttemptRecord;
  static const std::vector<Column<R>> kColumns = {
      Col("id", &R::id, ColumnRole::kRowId),
      Col("run_id", &R::run_id, ColumnRole::kKey),
      Col("job_id", &R::job_id, ColumnRole::kKey),
      Col("restart_count", &R::restart_count, ColumnRole::kKey),
      Col("nodes", &R::nodes),
      Col("started_at", &R::started_at),
      Col("ended_at", &R::ended_at),
      Col("slurm_state", &R::slurm_state),
      Col("exit_code", &R::exit_code),
      Col("action", &R::action),
      Col("end_reason", &R::end_reason),
      Col("trainer_end_reason", &R::trainer_end_reason),
      Col("resume_mode", &R::resume_mode),
      Col("checkpoint", &R::checkpoint),
      Col("step0", &R::step0),
      Col("last_step", &R::last_step),
      Col("resume_warmup_steps", &R::resume_warmup_steps),
      Col("warmup_until", &R::warmup_until),
      Col("world_size", &R::world_size),
      Col("config_hash", &R::config_hash),
      Col("trainer_message", &R::trainer_message),
      Col("trainer_exit_code", &R::trainer_exit_code),
      Col("trainer_signal", &R::trainer_signal),
      Col("slurm_reason", &R::slurm_reason),
      Col("slurm_exit_code", &R::slurm_exit_code),
      Col("init_from", &R::init_from),
      Col("hold_released_at", &R::hold_released_at),
      Col("hold_release_error", &R::hold_release_error),
      Col("in_job_seq", &R::in_job_seq, ColumnRole::kKey),
      Col("restart_cause", &R::restart_cause),
      Col("hang_last_heartbeat_at", &R::hang_last_heartbeat_at),
      Col("hang_detected_at", &R::hang_detected_at),
      Col("hang_stale_ranks", &R::hang_stale_ranks),
      Col("hang_stack", &R::hang_stack),
      Col("cluster", &R::cluster, ColumnRole::kKey),
      Col("eval_s", &R::eval_s),
      Col("evals", &R::evals),
      Col("first_eval_start", &R::first_eval_start),
      Col("last_eval_end", &R::last_eval_end),
  };
  static const ColumnTable<R> kTable("attempts", kColumns);
  return kTable;
}

const ColumnTable<StepRecord>& StepTable() {
  using R = StepRecord;
  static const std::vector<Column<R>> kColumns = {
      Col("run_id", &R::run_id),
      Col("attempt_id", &R::attempt_id),
      Col("step", &R::step),
      Col("time", &R::time),
      Col("lr", &R::lr),
      Col("loss", &R::loss),
      Col("loss_video", &R::loss_video),
      Col("loss_action", &R::loss_action),
      Col("grad_norm", &R::grad_norm),
      Col("tokens", &R::tokens),
      Col("padded_tokens", &R::padded_tokens),
      Col("samples", &R::samples),
      Col("valid_frames", &R::valid_frames),
      Col("padded_frames", &R::padded_frames),
      Col("step_time_s", &R::step_time_s),
      Col("tokens_per_s", &R::tokens_per_s),
      Col("in_warmup", &R::in_warmup),
      Col("epoch", &R::epoch),
      Col("superseded", &R::superseded),
      Col("nonfinite", &R::nonfinite),
      Col("nonfinite_episodes", &R::nonfinite_episodes),
  };
  static const ColumnTable<R> kTable("steps", kColumns);
  return kTable;
}

const ColumnTable<MicrostepRecord>& MicrostepTable() {
  using R = MicrostepRecord;
  static const std::vector<Column<R>> kColumns = {
      Col("run_id", &R::run_id),
      Col("attempt_id", &R::attempt_id),
      Col("step", &R::step),
      Col("micro", &R::micro),
      Col("tokens", &R::tokens),
      Col("fwd_bwd_s", &R::fwd_bwd_s),
      Col("peak_bytes", &R::peak_bytes),
  };
  static const ColumnTable<R> kTable("microsteps", kColumns);
  return kTable;
}

const ColumnTable<CheckpointRecord>& CheckpointTable() {
  using R = CheckpointRecord;
  static const std::vector<Column<R>> kColumns = {
      Col("run_id", &R::run_id),  // the key is (run_id, step): a re-report replaces the row
      Col("step", &R::step),
      Col("attempt_id", &R::attempt_id),  // NULL once the attempt is gone
      Col("path", &R::path),
      Col("bytes", &R::bytes),
      Col("seconds", &R::seconds),  // time the save took
      Col("reason", &R::reason),
      Col("valid", &R::valid),
      Col("time", &R::time),
  };
  static const ColumnTable<R> kTable("checkpoints", kColumns);
  return kTable;
}

const ColumnTable<StopSaveBudgetRecord>& StopSaveBudgetTable() {
  using R = StopSaveBudgetRecord;
  static const std::vector<Column<R>> kColumns = {
      Col("run_id", &R::run_id),  // the key: a re-check replaces the row
      Col("grace_s", &R::grace_s),
      Col("grace_source", &R::grace_source),
      Col("bytes_per_rank", &R::bytes_per_rank),
      Col("write_gbps", &R::write_gbps),
      Col("write_source", &R::write_source),
      Col("predicted_s", &R::predicted_s),
      Col("fits", &R::fits),
      Col("checked_at", &R::checked_at),
  };
  static const ColumnTable<R> kTable("stop_save_budgets", kColumns);
  return kTable;
}

const ColumnTable<WriteProbeRecord>& WriteProbeTable() {
  using R = WriteProbeRecord;
  static const std::vector<Column<R>> kColumns = {
      Col("folder", &R::folder),  // the key: a new probe replaces the row
      Col("gbps", &R::gbps),
      Col("bytes", &R::bytes),
      Col("measured_at", &R::measured_at),
  };
  static const ColumnTable<R> kTable("write_probes", kColumns);
  return kTable;
}

const ColumnTable<SeriesRow>& SeriesRowTable() {
  using R = SeriesRow;
  static const std::vector<Column<R>> kColumns = {
      Col("attempt_id", &R::attempt_id),
      Col("step", &R::step),
      Col("time", &R::time),
      Col("tokens", &R::tokens),
      Col("padded_tokens", &R::padded_tokens),
      Col("in_warmup", &R::in_warmup),
      Col("nonfinite", &R::nonfinite),
      Col("lr", &R::lr),
      Col("loss", &R::loss),
      Col("loss_video", &R::loss_video),
      Col("loss_action", &R::loss_action),
      Col("grad_norm", &R::grad_norm),
      Col("step_time_s", &R::step_time_s),
      Col("tokens_per_s", &R::tokens_per_s),
      Col("superseded", &R::superseded),
  };
  static const ColumnTable<R> kTable("steps", kColumns);
  return kTable;
}

}  // namespace baton
