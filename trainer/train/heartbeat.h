// The trainer's heartbeat: each rank rewrites RUN_DIR/heartbeat/rank-<NNNNN> at every phase
// change (init, load, micro-step, update, save), and inside loads and saves as bytes move (at most
// every 0.5 s, with the bytes done), so the launcher can tell a hung rank from a slow one
// (schema/heartbeat_record.h; docs/orchestrator.md, "Hangs").
//
// One pwrite of a fixed-size record at offset 0, no fsync: cheap enough for every micro-step. The
// file is opened O_NOFOLLOW and must be a regular file: a symbolic link, FIFO, folder or device at
// the path is refused, never written through. At most once a second a beat checks that the path
// still names the file it writes; one that was replaced (a rename over it, a restore) or removed
// is replaced by a new file of the rank's own (said once on stderr), so the rank never writes on
// into a file nobody reads. A file that cannot be opened or written makes the rank warn once on
// stderr and carry on without heartbeats (the launcher never calls a missing heartbeat a hang).
// Loads and saves carry their budget: the bytes they move at the rate this rank last measured,
// times 3, at least 60 s. Process-wide state, guarded by a mutex (a background save reports its
// progress from its own thread); no torch here.
#pragma once

#include <cstdint>
#include <string>

#include "schema/heartbeat_record.h"

namespace baton {

// Opens (creating heartbeat/) this rank's file and writes an `init` beat; from then on checkpoint
// reads and writes report their progress here (trainer/ckpt/transfer_progress.h). `node`: the
// SLURM node the record names (SLURMD_NODENAME); "" names this host.
void StartHeartbeat(const std::string& run_dir, int64_t rank, const std::string& node);
// Writes the current phase; no-op before StartHeartbeat or after a failed write.
void Beat(HeartbeatPhase phase, int64_t step, int64_t micro, double budget_s = 0);
// The last finished optimizer step's seconds, carried by later beats (the launcher's p99).
void HeartbeatStepDone(double seconds);

// How long moving `bytes` (a checkpoint load or save) may take: 3x at the last measured rate
// (a conservative 50 MB/s before any), at least 60 s.
double TransferBudgetS(int64_t bytes);
// A measured load or save: `bytes` in `seconds`.
void HeartbeatTransferRate(int64_t bytes, double seconds);
// The bytes of the regular files under `dir` (a checkpoint folder), 0 when unreadable.
int64_t FolderBytes(const std::string& dir);

// Sleeps for `seconds` (fractional), if positive.
void SleepSeconds(double seconds);

}  // namespace baton
