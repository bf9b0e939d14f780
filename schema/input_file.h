// The one way to read an input file (a run config, a dataset's metadata, the importer's profile,
// info.json, episodes.jsonl, latent .pth, empty_emb.pt) and to vet one before another reader
// opens it (the parquet files): regular files only, refused unopened otherwise (opening a FIFO
// blocks until a writer comes, and a device such as /dev/zero never ends), and never more bytes
// than the file holds or than the caller bounds. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>

#include "schema/status.h"

namespace baton {

// Code::kNotFound when absent, kData "<path>: it is a FIFO, not a regular file" (or a folder, a
// device, ...), kIo when the OS refuses.
Status CheckRegularFile(const std::string& path);

// The whole file, after CheckRegularFile's test (made again on the open file); kData when it is
// larger than `max_bytes`.
Result<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes);

// Opens `path` for reading only if it is a regular file, for a caller that reads it in its own
// way (a bounded prefix, a stream). O_NONBLOCK: a FIFO swapped in after a stat must not block the
// open. Returns the fd (the caller closes it), or -1 with `*why` set ("it is a FIFO, not a
// regular file", or the OS's reason).
int OpenRegularFile(const std::string& path, std::string* why);

}  // namespace baton
