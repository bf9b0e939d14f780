// Whether an async checkpoint's host snapshot fits beside the running process: the rule that
// turns `checkpoint.async: true` into a synchronous save when it does not
// (docs/checkpoint_format.md, "Async saves"). The snapshot is a host copy of this rank's share of
// the state (its AdamW moments and step counts, its master weights and its transformer/ export),
// alive from one periodic save until it is written.
//
// Refused when (a) the run states its host memory (slurm.mem_per_task_gb > 0) and the process's
// resident set plus the snapshot would pass it, or (b) the snapshot is more than half of what the
// host has available (MemAvailable): the page cache the background write fills needs the rest.
// `plan-memory` shows the same bytes as its "checkpoint snapshot" row. Torch-free; pure apart from
// ReadHostMemory; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace baton {

struct HostMemory {
  int64_t available = -1;  // /proc/meminfo MemAvailable, bytes; -1 unknown
  int64_t resident = -1;   // /proc/self/status VmRSS, bytes; -1 unknown
};

HostMemory ReadHostMemory();

// Why a snapshot of `snapshot` bytes must not be taken, as a sentence naming the figures and the
// key; "" when it fits. `limit` is slurm.mem_per_task_gb in bytes (0: not stated).
std::string SnapshotRefusal(int64_t snapshot, const HostMemory& host, int64_t limit);

}  // namespace baton
