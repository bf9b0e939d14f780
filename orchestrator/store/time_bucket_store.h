// The run's time buckets (run_time_buckets.h) in the store: read the inputs from a run's
// records, keep the answer in the time_buckets table (schema version 9) per attempt and for the
// run, and read it back.
//
// Kept current by the sync pass (sync_pass.h, after reconcile) and by ingest (after a pass that
// applied records). A refresh reads and computes with no lock held, then takes the write lock
// only to replace the rows, once a stamp of the inputs (a few aggregates) shows them unchanged
// since the read (else it reads again under the lock). Loading is linear in the run's attempts,
// step statistics and saves (one grouped read each). The CLI and the API read the stored rows
// and compute on read only for a run that has none yet (a database from before version 9 whose
// run was not synced since). Part of the store: the only SQL here is fixed text over the
// names of run_time_buckets.h; values are bound. Thread-compatible (one Store per thread).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"
#include "orchestrator/store/run_time_buckets.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

// The bucket input of `run` from its attempts, step rows (through the per-attempt statistics,
// so a run of a million rows is not read row by row), saves and submit time. The attempts'
// in_job_seq, hang_last_heartbeat_at and hang_detected_at are read when the attempts table has
// those columns (one place: FillOptionalAttemptColumns in time_bucket_store.cc).
[[nodiscard]] Result<BucketInput> LoadBucketInput(Store& store, const RunRecord& run, double now);

// What the buckets are computed from, in a few aggregate reads: the run's status, its attempts'
// times and ends, its saves, and how far its event files are ingested (ingest commits rows and
// cursors together, so new step rows move the cursors). Equal stamps read at two moments mean
// the inputs did not change between them.
[[nodiscard]] Result<std::vector<std::string>> TimeBucketInputStamp(Store& store, int64_t run_id);

// Recomputes and replaces the run's stored rows: computed outside any transaction, written in
// one write transaction. Must be called outside a transaction.
[[nodiscard]] Status RefreshTimeBuckets(Store& store, const RunRecord& run, double now);
// The read half of a refresh: the buckets from the records with no write lock (Code::kInternal
// inside a transaction), and the stamp of the inputs they came from.
[[nodiscard]] Result<RunTimeBuckets> ComputeTimeBucketsUnlocked(Store& store, const RunRecord& run,
                                                                double now,
                                                                std::vector<std::string>* stamp);
// The same inside the caller's transaction.
[[nodiscard]] Status RefreshTimeBucketsInTx(Store& store, const RunRecord& run, double now);

// The stored buckets of the run; none when it has no rows yet.
[[nodiscard]] Result<std::optional<RunTimeBuckets>> ReadTimeBuckets(Store& store, int64_t run_id);

// Stored, else computed now from the records (read-only).
[[nodiscard]] Result<RunTimeBuckets> TimeBucketsOf(Store& store, const RunRecord& run, double now);

}  // namespace baton
