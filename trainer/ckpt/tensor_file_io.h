// Checkpoint tensor files at disk speed: safetensors written and read once, hashed on the way.
//
// A save writes each file in large writes straight from the tensors' memory and feeds the same
// bytes to XXH3-64 as they go out, so the manifest's hash costs no second read; the file is
// fsync'd before the write returns. A load reads each file front to back in one pass, every
// tensor's bytes straight into the memory the caller names (a parameter, a moment) and the rest
// into a small scratch buffer, hashing all of it (the copies may be spread over threads); the
// caller compares the hash with the manifest's. The bytes written are those of WriteSafetensors
// (schema/safetensors.h) for the same tensors. Files are not atomic on their own: a checkpoint's
// .partial folder is. Torch-free; stateless functions, thread-safe on distinct files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "schema/safetensors.h"
#include "schema/status.h"

namespace baton {

struct FileDigest {
  uint64_t bytes = 0;
  std::string xxh3;  // 16 lowercase hex digits, as the manifest holds them
};

// "%016x" of an XXH3-64 value.
std::string Xxh3Hex(uint64_t hash);

// Called after every 4 MiB written (tensors smaller than that are taken together) and after the
// file's last write, with the bytes written since the last call; false stops the write (a
// background save being abandoned). May sleep (a test slowing the write down).
using AfterChunk = std::function<bool(uint64_t bytes)>;

// Writes `tensors` to `path` as safetensors (created or truncated), hashing every byte, and
// fsyncs it. On failure the file is removed and the Status (kIo) names it and the OS error; a
// write stopped by `after_chunk` is removed too and reported as "cancelled".
Result<FileDigest> WriteHashedSafetensors(const std::string& path,
                                          const std::vector<StTensorRef>& tensors,
                                          const std::map<std::string, std::string>& metadata = {},
                                          const AfterChunk& after_chunk = {});

// Where tensor `t`'s bytes go: exactly t.end - t.begin writable bytes, or nullptr to only hash
// them.
using TensorDestination = std::function<void*(const StTensorInfo& t)>;

// Reads the file `file` was opened from once, every tensor into `dest(t)`, and returns the
// digest of all its bytes (hashed front to back). `threads` > 1 spreads the reads into the
// destinations over that many threads, the caller's included; the hash is the same. kIo naming
// the file on a read error or a file that changed size.
Result<FileDigest> ReadHashedSafetensors(const SafetensorsFile& file, const TensorDestination& dest,
                                         int threads = 1);

}  // namespace baton
