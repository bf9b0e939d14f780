#include "orchestrator/nodes/log_patterns.h"

#include <re2/re2.h>

#include <fstream>
#include <map>

#include "orchestrator/nodes/host_name.h"

namespace baton {

struct LogPatterns::Compiled {
  std::string kind;
  std::unique_ptr<RE2> re;
  int host_group = -1;  // index of the group named host, -1: none
};

std::vector<NodeFaultPattern> DefaultNodeFaultPatterns() {
  // NCCL prefixes its lines "host:pid:tid [rank]"; srun names the host of a task it lost.
  const std::string nccl_host = R"(^(?:(?P<host>[A-Za-z0-9.-]+):\d+:\d+ \[\d+\] )?)";
  const std::string srun_task = R"(srun: error: (?P<host>[A-Za-z0-9.-]+): tasks? [0-9,-]+: )";
  return {
      {"signal", srun_task + "(?:Bus error|Segmentation fault|Illegal instruction)"},
      {"oom", srun_task + "Out Of Memory"},
      {"ecc", nccl_host + "(?i:.*uncorrectable ECC error)"},
      {"xid", R"(^(?:(?P<host>[A-Za-z0-9.-]+) kernel: )?.*NVRM: Xid \(PCI:[0-9A-Fa-f:.]+\): \d+)"},
      {"nccl_peer", R"(NCCL WARN .*(?:remote peer|peer) (?P<host>[A-Za-z][A-Za-z0-9.-]*)<\d+>)"},
      {"cuda_launch", nccl_host + ".*CUDA error: (?:unspecified launch failure|launch failure)"},
      {"io", R"((?i:\bInput/output error\b|\bI/O error\b))"},
  };
}

namespace {

bool KindWord(const std::string& kind) {
  constexpr size_t kMaxKindBytes = 32;
  if (kind.empty() || kind.size() > kMaxKindBytes) return false;
  for (char c : kind) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

Result<LogPatterns> LogPatterns::Compile(const std::vector<NodeFaultPattern>& patterns) {
  auto compiled = std::make_shared<std::vector<Compiled>>();
  for (const NodeFaultPattern& p : patterns) {
    const std::string what = "node fault pattern '" + p.kind + "' ('" + p.regex + "')";
    if (!KindWord(p.kind)) {
      return Status::Config(what + ": the kind must be 1-32 of [a-z0-9_]");
    }
    RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_unique<RE2>(p.regex, options);
    if (!re->ok()) return Status::Config(what + " does not compile: " + re->error());
    Compiled c;
    c.kind = p.kind;
    const std::map<std::string, int>& groups = re->NamedCapturingGroups();
    if (auto it = groups.find("host"); it != groups.end()) c.host_group = it->second;
    c.re = std::move(re);
    compiled->push_back(std::move(c));
  }
  LogPatterns out;
  out.compiled_ = std::move(compiled);
  return out;
}

size_t LogPatterns::size() const { return compiled_ ? compiled_->size() : 0; }

std::vector<LogMatch> LogPatterns::Scan(std::string_view text) const {
  std::vector<LogMatch> out;
  if (!compiled_) return out;
  size_t start = 0;
  while (start < text.size() && out.size() < kMaxLogMatches) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    for (const Compiled& c : *compiled_) {
      std::vector<re2::StringPiece> groups(size_t(c.re->NumberOfCapturingGroups()) + 1);
      if (!c.re->Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED,
                       groups.data(), int(groups.size())))
        continue;
      LogMatch m;
      m.kind = c.kind;
      m.line = std::string(line.substr(0, kMaxEvidenceBytes));
      if (c.host_group > 0 && groups[size_t(c.host_group)].data() != nullptr) {
        const std::string host(groups[size_t(c.host_group)].data(),
                               groups[size_t(c.host_group)].size());
        if (ValidHostName(host)) {
          m.host = host;
        } else {
          m.host_refused = true;
        }
      }
      out.push_back(std::move(m));
      break;
    }
  }
  return out;
}

Result<LogTail> ReadLogTail(const std::string& path, int64_t from_offset) {
  LogTail tail;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return tail;  // no log yet
  const int64_t size = int64_t(in.tellg());
  if (size < 0) return Status::Io("cannot size the job log " + path);
  if (from_offset > size) from_offset = 0;  // replaced or truncated: read it again
  int64_t begin = from_offset;
  if (size - begin > kMaxLogScanBytes) {
    tail.skipped_bytes = size - kMaxLogScanBytes - begin;
    begin = size - kMaxLogScanBytes;
  }
  tail.text.resize(size_t(size - begin));
  in.seekg(begin);
  if (!in.read(tail.text.data(), std::streamsize(tail.text.size()))) {
    return Status::Io("cannot read the job log " + path);
  }
  if (begin != from_offset) {
    // Started mid-line: the cut line is not evidence.
    const size_t nl = tail.text.find('\n');
    tail.text.erase(0, nl == std::string::npos ? tail.text.size() : nl + 1);
  }
  tail.next_offset = size;
  return tail;
}

}  // namespace baton
