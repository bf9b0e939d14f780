// The decisions of eval.mode job (docs/eval.md, "Eval jobs"), as pure functions over what the
// eval-job pass has read: the run's committed eval-target checkpoints, the steps already
// evaluated (evals/step_<N>.json exists and parses), and the run's eval-job rows in the store.
//
//   - A target that is evaluated gets nothing, ever (a done row, too, ends its story).
//   - A target with a live job (pending, running) or a row saying it did not verify gets nothing.
//   - A target without a row gets attempt 1; one whose last attempt failed gets attempt 2, once.
//   - A failed attempt kEvalJobMaxAttempts is reported once, and nothing is submitted after it.
// Each checkpoint is decided alone: one that fails never holds back another, nor training.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/store_eval_jobs.h"

namespace baton {

// The first job and its one retry.
inline constexpr int64_t kEvalJobMaxAttempts = 2;

struct EvalJobAction {
  enum class Kind { kSubmit, kReport };
  Kind kind = Kind::kSubmit;
  int64_t step = 0;
  int64_t attempt = 0;  // kSubmit: the attempt to record (1 or 2)
  int64_t row_id = 0;   // kReport: the failed row to mark reported
  std::string reason;   // kReport: why the last attempt failed
};

// What to do for one run, in step order. `targets`: committed eval-target steps; `jobs`: the
// run's rows (any order).
std::vector<EvalJobAction> PlanEvalJobs(const std::vector<int64_t>& targets,
                                        const std::set<int64_t>& evaluated,
                                        const std::vector<EvalJobRecord>& jobs);

// A live row after what SLURM says of its job (`job`: nullopt when SLURM no longer knows it),
// whether its result exists, and the last line of its log (for the reason); `now` stamps it.
// A result wins over any SLURM state; a job that ended without one failed, with SLURM's state,
// exit code and the log line as its reason. A requeued or preempted job stays pending.
EvalJobRecord NextEvalJobState(const EvalJobRecord& row, const std::optional<JobInfo>& job,
                               bool evaluated, const std::string& log_line, double now);

}  // namespace baton
