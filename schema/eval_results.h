// A run's eval results: one file per evaluated checkpoint, <run>/evals/step_<N>.json, holding
// that checkpoint's EvalEvent (schema/event_records.h). Written once and atomically by whoever
// computed it (the training job inline, or `baton-train eval` in an eval job); read by the
// trainer's keep-best retention and by the orchestrator's ingest, so both see one truth.
//
// The reader is lenient the way ingest is: a file that is too large, unreadable, not JSON or
// without a step is skipped and named in `problems`, never fatal. Pure functions of the
// filesystem; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schema/event_records.h"
#include "schema/run_config.h"
#include "schema/run_folder.h"
#include "schema/status.h"

namespace baton {

// An eval result is a few hundred bytes; a larger file is not one.
constexpr uint64_t kMaxEvalResultBytes = 64 * 1024;

struct EvalResults {
  std::map<int64_t, EvalEvent> by_step;
  std::vector<std::string> problems;  // "<file>: <why>" for each file skipped
};

// Writes evals/step_<step>.json atomically (the folder is made when missing).
Status WriteEvalResult(const RunFolder& run, const EvalEvent& result);

// Every evals/step_<N>.json of the run; no folder = none.
EvalResults ReadEvalResults(const RunFolder& run);

// The value of `metric` (one of kEvalMetricNames, schema/run_config.h) in `result`; NaN when the
// name is unknown or the value missing.
double EvalMetric(const EvalEvent& result, const std::string& metric);

// Whether the checkpoint at `step` is one the run evaluates: saves fall at multiples of
// checkpoint.every and at run.steps, and every eval.every-th of them is evaluated, counted by
// step so the answer stays the same across requeues, resumes and retention. The last save is
// always evaluated, so a run ends with a value. false when the config has no eval.
bool IsEvalTarget(const RunConfig& config, int64_t step);

}  // namespace baton
