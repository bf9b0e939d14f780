// Run-history read queries behind the web UI and the CLI's history views: run summaries for the
// runs table, a run's step rows for the series endpoint, and per-attempt step statistics for the
// summaries and the audit line.
//
// Part of the store — the only code that speaks SQL — but read-only: every function here only
// SELECTs, through the connection's cached prepared statements. Free functions over a Store the
// caller owns; the HTTP server gives each request its own pooled read connection (WAL lets those
// read while ingestion writes). Thread-compatible: one Store per thread, as store.h says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"
#include "orchestrator/store/series_values.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

// Columns the runs table can sort by. Each maps to a fixed SQL expression (never user text).
enum class RunSortKey { kCreated, kId, kName, kStatus, kProgress, kLastLoss, kLastLr, kUpdated };

// "created", "id", "name", "status", "progress", "last_loss", "last_lr", "updated".
std::optional<RunSortKey> ParseRunSortKey(const std::string& name);

struct RunListQuery {
  RunSortKey sort = RunSortKey::kCreated;
  bool descending = true;
  int64_t limit = 50;
  int64_t offset = 0;
  std::string status;     // only runs with this status; '' = all
  std::string name;       // only runs whose name contains this (case-insensitive); '' = all
  std::string partition;  // only runs submitted to this partition; '' = all
  std::string owner;      // only runs this Unix user submitted; '' = all
  std::string cluster;    // only runs on this SLURM cluster; '' = all
  std::optional<double> created_from, created_to;  // created_at in [from, to) (Unix seconds)
};

// One attempt as the runs table's restart tooltip needs it.
struct AttemptBrief {
  std::string job_id;
  int64_t restart_count = 0;
  std::string end_reason;  // '' while open
  std::optional<int64_t> step0;
  std::optional<int64_t> last_step;
};

// A run plus what the runs table shows about its progress. `run.config` is left empty by
// ListRunSummaries (the table does not need it) and filled by GetRunSummary.
struct RunSummary {
  RunRecord run;
  int64_t attempts = 0;
  std::optional<int64_t> last_step;  // last step index of the effective series
  double last_loss = kNoValue;
  double last_lr = kNoValue;
  std::optional<double> last_step_time;
  std::optional<int64_t> last_checkpoint_step;
  std::optional<double> last_checkpoint_time;
  std::optional<double> first_started_at;  // earliest attempt start
  std::optional<double> last_ended_at;     // latest attempt end
  bool has_open_attempt = false;           // an attempt without an end yet
  std::vector<AttemptBrief> attempt_list;  // in the order they happened
};

struct RunSummaryPage {
  std::vector<RunSummary> runs;
  int64_t total = 0;  // runs matching the filter, over all pages
};

[[nodiscard]] Result<RunSummaryPage> ListRunSummaries(Store& store, const RunListQuery& q);
// Code::kNotFound naming the id when there is no such run.
[[nodiscard]] Result<RunSummary> GetRunSummary(Store& store, int64_t run_id);

// A run's step rows for the series row path, in attempt order then step order (so each
// attempt's rows are contiguous): every effective row, plus the superseded ones when
// `include_superseded`.
[[nodiscard]] Result<std::vector<SeriesRow>> ReadSeriesRows(Store& store, int64_t run_id,
                                                            bool include_superseded);
// The effective series' skipped (non-finite) steps with index in [from, to], in step order.
[[nodiscard]] Result<std::vector<int64_t>> ReadEffectiveNonfiniteSteps(Store& store, int64_t run_id,
                                                                       int64_t from, int64_t to);

// Aggregates over one attempt's step rows. "Effective" counts only rows with superseded = 0.
struct AttemptStepStats {
  int64_t attempt_id = 0;
  int64_t effective_steps = 0;
  int64_t superseded_steps = 0;                  // this attempt's rows that a later attempt re-did
  int64_t warmup_steps = 0;                      // effective rows with in_warmup
  int64_t nonfinite_steps = 0;                   // effective rows the trainer skipped
  int64_t tokens = 0;                            // effective
  int64_t padded_tokens = 0;                     // effective
  double step_time_s = 0;                        // effective, summed
  double superseded_step_time_s = 0;             // compute spent on rows later re-done
  std::optional<int64_t> first_step, last_step;  // of the effective rows
  std::optional<double> first_time, last_time;   // of all its rows
};

// One entry per attempt of the run, in the order they happened (attempts without rows too).
[[nodiscard]] Result<std::vector<AttemptStepStats>> ReadAttemptStepStats(Store& store,
                                                                         int64_t run_id);

// Resets every statement of the connection so it holds no read snapshot. A statement stepped to
// its first row and left there (a COUNT, a lookup by id) keeps its read transaction open: the
// connection would go on seeing old data, and the WAL could not be checkpointed past it. The
// server calls this when a request gives its connection back.
void ReleaseReadSnapshot(Store& store);

}  // namespace baton
