// Event ingestion: <run_dir>/events/*.jsonl (docs/events.md) into the store, idempotently.
//
// Each events file has a byte cursor in ingest_cursors. A pass reads the file from its cursor in
// chunks; the rows a chunk produces and the cursor advanced past that chunk's last complete line
// commit in one transaction, so a crash (or a failed write) at any point either keeps the whole
// chunk or none of it — re-ingesting never duplicates a row. A last line without its '\n' (a
// writer still busy, or killed mid-write) is left for the next pass. Complete lines that are not
// valid records are skipped, counted in ingest_cursors.bad_lines and reported, never retried.
// A line longer than a chunk (8 MiB: no record is near that) is skipped the same way, found in
// 64 KiB reads outside any transaction: it is never held in memory, nor the write lock over it.
//
// Files are applied in the order their attempts happened (RunFolder::ListEventFiles: job id, then
// restart count, then the launcher's in-job restart, numerically), which is what the store's
// superseded marking relies on. A record whose type is unknown, or whose fields do not parse, is
// a bad line like invalid JSON.
//
// Times: a record's "time" must lie in [0, kMaxEventTime]; outside, the record is a bad line.
// Values: a number that is null (how the trainer's JSON writer spells NaN and Inf), missing or
// not finite is stored as NULL, never as NaN; a step flagged "nonfinite" keeps its row with the
// flag and the step's episode ids. A step row takes its figures from the event through one field
// table (store/step_event_fields.h). Step rows are written in batches (Store::InsertStepsInTx),
// before the next record of another type and before the chunk's cursor, in the same transaction.
// The first segment_end of an attempt sets the trainer's end reason, message (cut to
// kMaxTrainerMessageBytes), exit code and signal; later ones (other ranks failing after the first)
// are ignored. An attempt_end sets the run's status from the launcher's action; a hang it reports
// keeps its stacks cut to 64 KiB. An `eval` record stores its checkpoint's result
// (store/store_evals.h), replacing what the run had at that step. After a pass that applied
// records, IngestRun refreshes the run's time buckets (store/time_bucket_store.h). Stateless
// functions over a Store; thread-compatible (one Store per thread).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "orchestrator/store/store.h"
#include "schema/run_folder.h"

namespace baton {

// Longest trainer message (segment_end "message") kept, in bytes: it is one line; a longer one
// is cut at a UTF-8 boundary and marked with "…".
inline constexpr size_t kMaxTrainerMessageBytes = 4096;

// Latest event time accepted, Unix seconds (2100-01-01): a record whose "time" is negative or
// later is a bad line (a broken clock, or a hand-written file), never a row.
inline constexpr double kMaxEventTime = 4102444800.0;

struct IngestStats {
  int64_t files = 0;                  // event files looked at
  int64_t records = 0;                // records applied
  int64_t steps = 0;                  // of which step records
  int64_t bad_lines = 0;              // complete lines skipped as invalid
  int64_t bytes = 0;                  // bytes consumed
  std::vector<std::string> warnings;  // one per bad line (file:offset: why)

  void Add(const IngestStats& o);
};

struct IngestOptions {
  // Bytes read (and committed) per transaction. Bounds memory and lock hold time.
  int64_t chunk_bytes = 8 << 20;
  // Test hook: called after each record is applied, inside the open transaction (a test makes
  // it _exit() to simulate a crash between rows and the cursor).
  std::function<void(int64_t records_in_chunk)> after_record;
  // IngestRun: refresh the run's time buckets when it applied any record. The sync pass turns it
  // off for a live run, whose buckets it refreshes once after reconcile anyway.
  bool refresh_time_buckets = true;
};

// Ingests every events file of `run` from its cursor.
[[nodiscard]] Result<IngestStats> IngestRun(Store& store, const RunRecord& run,
                                            const IngestOptions& options = {});

// One file (must be one of `run`'s).
[[nodiscard]] Result<IngestStats> IngestFile(Store& store, const RunRecord& run,
                                             const std::string& path,
                                             const IngestOptions& options = {});

}  // namespace baton
