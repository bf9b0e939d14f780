// The store's eval jobs (table eval_jobs, docs/eval.md "Eval jobs"): one row per SLURM job
// `baton watch` / `baton serve` submitted to evaluate one checkpoint of a run (eval.mode job),
// and one per checkpoint that did not verify and so was never submitted. The eval-job pass
// (orchestrator/reconcile/eval_job_pass.h) decides and submits; this unit keeps what it did
// durable, so no store that saw a submission submits it again. The row of a new job is written
// in the same write transaction as its sbatch call (the store's write lock is the claim: a second
// watcher waits, then sees the row); UNIQUE (run, step, attempt) backs it.
//
// Part of the store, the only code that speaks SQL. Free functions over a Store the caller owns;
// the *InTx ones expect the caller's transaction. Thread-compatible, like the Store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

// What an eval job is: live while pending or running; done once evals/step_<N>.json exists;
// failed when its job ended without one; unverified (attempt 0) when the checkpoint did not verify.
inline constexpr const char* kEvalJobPending = "pending";
inline constexpr const char* kEvalJobRunning = "running";
inline constexpr const char* kEvalJobDone = "done";
inline constexpr const char* kEvalJobFailed = "failed";
inline constexpr const char* kEvalJobUnverified = "unverified";

struct EvalJobRecord {
  int64_t id = 0;
  int64_t run_id = 0;
  int64_t step = 0;
  int64_t attempt = 1;  // 1, then 2 for the one retry; 0 for an unverified checkpoint
  std::string job_id;
  std::string state = kEvalJobPending;
  std::string reason;
  bool reported = false;  // its failure was raised (incident)
  double submitted_at = 0;
  double updated_at = 0;
  std::optional<double> ended_at;

  bool live() const { return state == kEvalJobPending || state == kEvalJobRunning; }
};

// Inserts `job` (id ignored); its id. kInvalidArgument when (run, step, attempt) has a row
// already: another watcher recorded it first.
[[nodiscard]] Result<int64_t> InsertEvalJobInTx(Store& store, const EvalJobRecord& job);
// The job's state, reason and times (by id); ended_at is set when the state is not live.
[[nodiscard]] Status UpdateEvalJob(Store& store, const EvalJobRecord& job);
[[nodiscard]] Status MarkEvalJobReported(Store& store, int64_t id, double now);

// One run's rows, by step then attempt.
[[nodiscard]] Result<std::vector<EvalJobRecord>> ListEvalJobs(Store& store, int64_t run_id);
// The runs with a live eval job: the pass follows them up after the run itself has ended.
[[nodiscard]] Result<std::vector<int64_t>> RunsWithLiveEvalJobs(Store& store);

}  // namespace baton
