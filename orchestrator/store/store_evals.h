// The store's eval results (table evals, docs/eval.md "Results"): one row per (run, checkpoint
// step) with that checkpoint's held-out loss and its video and action parts, however it arrived
// (an `eval` event in an events file, or the run's evals/step_<N>.json). A later arrival for the
// same step replaces the row whole; ingest writes them, the CLI, the API, the sweep view and
// /metrics read them.
//
// Part of the store, the only code that speaks SQL. Free functions over a Store the caller owns;
// thread-compatible, like the Store.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"
#include "orchestrator/store/store.h"
#include "schema/event_records.h"
#include "schema/status.h"

namespace baton {

// Where an eval row came from (evals.source).
inline constexpr const char* kEvalFromEvent = "event";
inline constexpr const char* kEvalFromFile = "file";

struct EvalRecord {
  int64_t run_id = 0;
  int64_t step = 0;  // the checkpoint's step
  double loss = kNoValue, loss_video = kNoValue, loss_action = kNoValue;
  std::string mode;  // inline | job
  int64_t episodes = 0, valid_frames = 0;
  double seconds = kNoValue;
  std::string config_hash;
  std::string job_id;
  std::string checkpoint;
  std::string source;     // kEvalFromEvent | kEvalFromFile
  double arrived_at = 0;  // when ingest stored it
};

// The row of `e` (which has a step) for `run_id`, arriving now from `source`.
EvalRecord EvalRecordOf(const EvalEvent& e, int64_t run_id, const std::string& source,
                        double arrived_at);

// Whether two rows hold the same result (every column but source and arrival time; NaN equals
// NaN): a file read again that says what the row says is not a new arrival.
bool SameEvalResult(const EvalRecord& a, const EvalRecord& b);

// Inside the caller's write transaction: inserts the row, or replaces the run's row at its step.
[[nodiscard]] Status UpsertEvalInTx(Store& store, const EvalRecord& e);

// The run's rows in step order.
[[nodiscard]] Result<std::vector<EvalRecord>> ListEvals(Store& store, int64_t run_id);

// The row with the lowest finite loss (the earliest step on a tie); none when no row has one.
std::optional<EvalRecord> BestEval(const std::vector<EvalRecord>& evals);

// [{"step": N, "metrics": {"loss", "loss_video", "loss_action"}}] in the order given (null for a
// value that is not a finite number): `baton show --json` and the web API's run.
nlohmann::json EvalsJson(const std::vector<EvalRecord>& evals);

}  // namespace baton
