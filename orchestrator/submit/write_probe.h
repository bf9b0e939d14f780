// ProbeWriteRate: the fsync'd sequential write rate of a folder, from a short probe: one file of
// `bytes` written in 4 MiB writes (the checkpoint writer's size), fsync'd, timed, removed.
//
// `baton submit` and `baton resume` divide the stop save's bytes by it (grace_check.h). The folder
// is often shared (the parent of the run folders), so the probe trusts nothing already there: its
// file has no name (O_TMPFILE) or, where the filesystem lacks that, is created new (O_CREAT |
// O_EXCL | O_NOFOLLOW: never a link, a FIFO or another's file) under an unpredictable name
// (.baton-write-probe-<16 random hex digits>) and unlinked right after it is opened. Either way
// the bytes go through the descriptor into a file no path names: whatever ends the process, a
// signal or SIGKILL included, the filesystem frees them. Before
// writing it checks that the folder has room for the probe and a margin (statvfs). The errors
// are the ones a checkpoint would meet later, named with the folder and what to do: kIo for a
// folder that is not writable, full, too small for the probe, or on a filesystem that refuses
// fsync. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "schema/status.h"

namespace baton {

inline constexpr int64_t kWriteProbeBytes = int64_t(128) << 20;
inline constexpr const char* kWriteProbePrefix = ".baton-write-probe-";

// GB/s (1e9 bytes per second).
[[nodiscard]] Result<double> ProbeWriteRate(const std::string& folder,
                                            int64_t bytes = kWriteProbeBytes);

}  // namespace baton
