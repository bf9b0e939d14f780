// ProbeWriteRate: the fsync'd sequential write rate of a folder, from a short probe: one file of
// `bytes` written in 4 MiB writes (the checkpoint writer's size), fsync'd, timed, removed.
//
// `baton submit` divides the stop save's bytes by it (grace_check.h). The probe file is
// `.baton-write-probe-PID` inside the folder and is removed whatever happens. The errors are the
// ones a checkpoint would meet later, named with the folder and what to do: kIo for a folder
// that is not writable, full, or on a filesystem that refuses fsync. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "schema/status.h"

namespace baton {

inline constexpr int64_t kWriteProbeBytes = int64_t(128) << 20;

// GB/s (1e9 bytes per second).
[[nodiscard]] Result<double> ProbeWriteRate(const std::string& folder,
                                            int64_t bytes = kWriteProbeBytes);

}  // namespace baton
