// EnsureSaveSpace: the free-space check before every checkpoint save (docs/eval.md, "Storage
// forecast"), on the rank that creates the .partial folder, before it creates it.
//
// A save needs the bytes of one checkpoint folder (CheckpointDiskBytes), each file rounded up
// to the filesystem's block, plus kSaveReserveBytes for the events and log lines written until
// the next save. When the checkpoints folder's filesystem has less, the checkpoints that
// retention would delete anyway once this save commits (RetentionKeeps with the new step as the
// newest, with the run's eval results) are deleted now, oldest first, until the save fits; the
// newest valid checkpoint and the newest finite one (and with keep-best, one waiting for its
// eval) are never deleted, so the run always keeps one to resume from. When that is
// not enough the save is not started: FatalError kExitIo (74) naming the bytes needed and free.
// Nothing half-written is ever left by this check. Not thread-safe (one saver per folder).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/run_config.h"

namespace baton {

inline constexpr int64_t kSaveReserveBytes = 64 * 1024;

struct SaveSpace {
  int64_t needed = 0;               // what the save asked for (blocks and reserve included)
  int64_t free = 0;                 // free space after any pruning
  std::vector<std::string> pruned;  // folders deleted to make room, oldest first
};

// `bytes` and `files`: one checkpoint folder (CheckpointDisk). Fails (74) when it cannot fit.
SaveSpace EnsureSaveSpace(const std::string& checkpoints_dir, int64_t step, int64_t bytes,
                          int64_t files, const RunConfig& config);

}  // namespace baton
