#include "orchestrator/ingest/events_file_reads.h"

#include <cstring>

namespace baton {

Result<int64_t> FindLineEnd(std::ifstream& in, const std::string& path, int64_t from) {
  std::string piece(64 << 10, '\0');
  in.clear();
  in.seekg(from);
  int64_t at = from;
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    const void* nl = std::memchr(piece.data(), '\n', static_cast<size_t>(n));
    if (nl != nullptr) return at + (static_cast<const char*>(nl) - piece.data()) + 1;
    at += n;
  }
  if (in.bad()) return Status::Io(path + ": read error at byte " + std::to_string(at));
  return int64_t{-1};
}

void ReadChunk(std::ifstream& in, int64_t from, int64_t chunk_bytes, std::string* buf) {
  in.clear();
  in.seekg(from);
  buf->assign(static_cast<size_t>(chunk_bytes), '\0');
  in.read(buf->data(), chunk_bytes);
  buf->resize(static_cast<size_t>(in.gcount()));
}

}  // namespace baton
