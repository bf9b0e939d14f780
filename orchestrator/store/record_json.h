// The JSON form of the store's records, shared by every answer baton gives: the command line's
// --json (orchestrator/cli) and the web API (orchestrator/http). Each answer starts from these
// objects and adds or drops its own few keys, so a field is named and formatted in one place.
//
// One rule for absent values, everywhere: null. That covers an empty optional, a number that is
// not finite (NaN or ±Inf — strict JSON has neither) and the text columns whose '' means "none"
// (a run's job id; an attempt's states, reasons and message). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "orchestrator/store/records.h"

namespace baton {

// null for an absent or non-finite value, else the number.
nlohmann::json JsonNumber(double v);
nlohmann::json JsonNumber(const std::optional<double>& v);
nlohmann::json JsonNumber(const std::optional<int64_t>& v);
// null for '', else the text.
nlohmann::json JsonTextOrNull(const std::string& s);

// {id, name, status, reason, run_dir, config_source, target_steps, max_restarts, max_failures,
// job_id, created_at, updated_at}: every column but the frozen config (large; an answer that
// shows it adds it).
nlohmann::json RunJson(const RunRecord& r);

// {job_id, restart_count, nodes, started_at, ended_at, slurm_state, exit_code, action,
// end_reason, trainer_end_reason, trainer_message, trainer_exit_code, resume_mode, checkpoint,
// step0, last_step, resume_warmup_steps, warmup_until, world_size, trainer_signal, slurm_reason,
// slurm_exit_code, init_from, hold_released_at, hold_release_error, signal, log}: the attempt as
// recorded, plus the signal that ended it and its log file relative to the run folder
// (attempt_evidence.h). How an answer numbers attempts ("attempt") is its own.
nlohmann::json AttemptJson(const AttemptRecord& a);

// {step, path, bytes, seconds, reason, valid, time}.
nlohmann::json CheckpointJson(const CheckpointRecord& c);

// A step the trainer skipped (non-finite loss or gradient norm): {step, attempt, loss,
// loss_video, loss_action, grad_norm, lr, episodes, time}, with `attempt` numbered as the caller
// numbers its attempts.
nlohmann::json NonfiniteStepJson(const StepRecord& s, int64_t attempt);

// `j` without `keys`: for an answer that has always published fewer fields than the record has.
nlohmann::json WithoutKeys(nlohmann::json j, std::initializer_list<const char*> keys);

// The text of `j` (nlohmann's `indent`: -1 one line, N spaces per level). Invalid UTF-8 in a
// string (a name or message as the user or trainer wrote it) is replaced by U+FFFD instead of
// throwing: an answer is always given.
std::string DumpJson(const nlohmann::json& j, int indent = -1);

}  // namespace baton
