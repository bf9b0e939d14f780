#include "schema/heartbeat_record.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace baton {

namespace {

const char* const kPhases[] = {"init", "load", "micro-step", "update", "save"};
constexpr const char* kMagic = "baton-heartbeat 1";

std::string Safe(const std::string& s) {
  std::string out = s.substr(0, 40);
  for (char& c : out) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return out.empty() ? "-" : out;
}

}  // namespace

const char* HeartbeatPhaseName(HeartbeatPhase p) {
  const size_t i = static_cast<size_t>(p);
  return i < 5 ? kPhases[i] : "?";
}

std::optional<HeartbeatPhase> ParseHeartbeatPhase(std::string_view name) {
  for (size_t i = 0; i < 5; ++i) {
    if (name == kPhases[i]) return static_cast<HeartbeatPhase>(i);
  }
  return std::nullopt;
}

std::string FormatHeartbeat(const HeartbeatRecord& r) {
  char buf[kHeartbeatRecordBytes + 64];
  const int n =
      std::snprintf(buf, sizeof buf,
                    "%s rank=%lld pid=%lld host=%s node=%s phase=%s step=%lld micro=%lld wall=%.6f "
                    "budget_s=%.3f step_s=%.6f end",
                    kMagic, (long long)r.rank, (long long)r.pid, Safe(r.host).c_str(),
                    Safe(r.node).c_str(), HeartbeatPhaseName(r.phase), (long long)r.step,
                    (long long)r.micro, r.wall, r.budget_s, r.step_s);
  std::string out(buf, size_t(n > 0 ? n : 0));
  if (out.size() > kHeartbeatRecordBytes - 1) out.resize(kHeartbeatRecordBytes - 1);
  out.resize(kHeartbeatRecordBytes - 1, ' ');
  out += '\n';
  return out;
}

std::optional<HeartbeatRecord> ParseHeartbeat(std::string_view text) {
  if (text.size() != kHeartbeatRecordBytes || text.back() != '\n') return std::nullopt;
  std::istringstream in{std::string(text)};
  std::string a, b;
  in >> a >> b;
  if (a + " " + b != kMagic) return std::nullopt;
  HeartbeatRecord r;
  bool ended = false;
  int seen = 0;
  std::string tok;
  while (in >> tok) {
    if (tok == "end") {
      ended = true;
      break;
    }
    const size_t eq = tok.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = tok.substr(0, eq), v = tok.substr(eq + 1);
    char* endp = nullptr;
    auto num = [&]() {
      const double d = std::strtod(v.c_str(), &endp);
      return (endp && *endp == '\0' && !v.empty()) ? d : -1.0;
    };
    ++seen;
    if (key == "rank")
      r.rank = int64_t(num());
    else if (key == "pid")
      r.pid = int64_t(num());
    else if (key == "host")
      r.host = v;
    else if (key == "node")
      r.node = v;
    else if (key == "phase") {
      auto p = ParseHeartbeatPhase(v);
      if (!p) return std::nullopt;
      r.phase = *p;
    } else if (key == "step")
      r.step = int64_t(num());
    else if (key == "micro")
      r.micro = int64_t(num());
    else if (key == "wall")
      r.wall = num();
    else if (key == "budget_s")
      r.budget_s = num();
    else if (key == "step_s")
      r.step_s = num();
    else
      --seen;
  }
  if (!ended || seen < 10 || r.pid <= 0 || r.wall <= 0) return std::nullopt;
  return r;
}

}  // namespace baton
