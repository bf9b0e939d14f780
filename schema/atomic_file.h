// Atomic file writes: the one rule every write that matters follows.
//
// Data goes to "<path>.tmp.<pid>" in the same folder, is fsynced, renamed over <path>, and the
// folder is fsynced, so a reader sees the old file or the whole new one, never a torn one. A
// crash leaves at most a stray ".tmp." file that nothing loads. Thread-safe (no shared state).
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "schema/status.h"

namespace baton {

// Calls `write(FILE*)` on a temp file, then fsync + rename + parent fsync. The temp file is
// removed when `write` fails or the FILE reports an error.
Status WriteFileAtomic(const std::string& path, const std::function<Status(std::FILE*)>& write);

// Convenience for small text files (configs, JSON documents).
Status WriteTextAtomic(const std::string& path, const std::string& text);

// fsync a directory (after a rename inside it).
Status FsyncDir(const std::string& dir);

// Reads a whole file; Code::kNotFound when absent, kIo when unreadable.
Result<std::string> ReadFile(const std::string& path);

}  // namespace baton
