// A run's eval jobs (eval.mode job; docs/eval.md, "Eval jobs") in `baton show`: one summary line,
// then one line per checkpoint whose eval failed or that did not verify, with the reason; and
// the rows as JSON for `baton show --json` ("eval_jobs"). Steps are the checkpoints' own, as in
// `baton checkpoints`. Writes to std::cout; single-threaded.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "orchestrator/store/store_eval_jobs.h"

namespace baton {

// Nothing when the run has no eval job.
void PrintEvalJobs(const std::vector<EvalJobRecord>& jobs);

nlohmann::json EvalJobsJson(const std::vector<EvalJobRecord>& jobs);

}  // namespace baton
