// Node-fault patterns over job logs: which log lines name a faulty node (docs/nodes.md, "Log
// lines").
//
// A pattern is a kind (ecc, xid, nccl_peer, cuda_launch, io, signal, oom, or a site's own word)
// and an RE2 expression: linear time in the line's length, so a hostile log cannot stall the
// sync pass. An expression with a group named `host` names the node that printed or caused the
// line; a line whose pattern names no host is attributed only when the attempt ran on a single
// node (the caller decides). Captured names pass ValidHostName or the match is kept as refused
// evidence, never attributed. Only the last kMaxLogScanBytes of what is new in a log are read.
// A LogPatterns is immutable once compiled; thread-safe to share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schema/status.h"

namespace baton {

// Bytes of a log scanned per pass, from its end (older new bytes are skipped, with a note).
inline constexpr int64_t kMaxLogScanBytes = 1 << 20;
// Matches kept per scan (a log that repeats one error a million times is one node's evidence).
inline constexpr size_t kMaxLogMatches = 64;
// Bytes of a matched line kept as evidence.
inline constexpr size_t kMaxEvidenceBytes = 300;

struct NodeFaultPattern {
  std::string kind;   // [a-z0-9_]+, 1-32 bytes
  std::string regex;  // RE2 syntax
};

// Uncorrectable ECC, Xid, NCCL errors naming a peer host, CUDA launch failures, I/O errors, and
// srun's lines for a task killed by SIGBUS/SIGSEGV/SIGILL or the OOM killer.
std::vector<NodeFaultPattern> DefaultNodeFaultPatterns();

struct LogMatch {
  std::string kind;
  std::string host;           // '' when the pattern names none (or the name was refused)
  bool host_refused = false;  // the line named a host that is not a valid host name
  std::string line;           // the line, cut to kMaxEvidenceBytes
};

class LogPatterns {
 public:
  // kConfig naming the pattern (its kind and expression) and RE2's error when one does not
  // compile or its kind is not a word.
  [[nodiscard]] static Result<LogPatterns> Compile(const std::vector<NodeFaultPattern>& patterns);

  // Each line of `text` against the patterns in order; the first that matches wins. At most
  // kMaxLogMatches matches.
  std::vector<LogMatch> Scan(std::string_view text) const;

  size_t size() const;

 private:
  struct Compiled;
  std::shared_ptr<const std::vector<Compiled>> compiled_;
};

// What is new in a log since `from_offset`: at most the last kMaxLogScanBytes of it (a partial
// first line dropped when the read starts mid-file), and the offset to resume from (the file's
// size). A missing file reads as empty at offset 0; a file shorter than from_offset (replaced)
// is read from its start.
struct LogTail {
  std::string text;
  int64_t next_offset = 0;
  int64_t skipped_bytes = 0;  // new bytes not scanned (over kMaxLogScanBytes)
};
[[nodiscard]] Result<LogTail> ReadLogTail(const std::string& path, int64_t from_offset);

}  // namespace baton
