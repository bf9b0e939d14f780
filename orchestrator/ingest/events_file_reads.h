// Reading an events file by byte offset, for the ingester (event_ingester.cc): a chunk from the
// cursor on, and the end of a line too long for one. The ingester owns the stream and where it
// reads; these only seek and read. Not thread-safe (one stream per caller).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "schema/status.h"

namespace baton {

// The offset just past the first '\n' at or after `from`, reading 64 KiB at a time; -1 when the
// file ends first (a line still being written).
[[nodiscard]] Result<int64_t> FindLineEnd(std::ifstream& in, const std::string& path, int64_t from);

// Reads up to `chunk_bytes` of the file from `from` into `buf` (fewer at its end).
void ReadChunk(std::ifstream& in, int64_t from, int64_t chunk_bytes, std::string* buf);

}  // namespace baton
