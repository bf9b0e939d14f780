#include "schema/heartbeat_record.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

namespace baton {

namespace {

constexpr const char* kMagic = "baton-heartbeat 1";
// Host and node names are cut to this many bytes, and shorter when the record would not fit.
constexpr size_t kMaxNameBytes = 40;

std::string Safe(const std::string& s, size_t max_bytes) {
  std::string out = s.substr(0, max_bytes);
  for (char& c : out) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return out.empty() ? "-" : out;
}

std::string Text(const HeartbeatRecord& r, size_t name_bytes) {
  char buf[kHeartbeatRecordBytes + 512];
  const int n =
      std::snprintf(buf, sizeof buf,
                    "%s rank=%lld pid=%lld host=%s node=%s phase=%s step=%lld micro=%lld wall=%.6f "
                    "budget_s=%.3f step_s=%.6f done=%lld end",
                    kMagic, (long long)r.rank, (long long)r.pid, Safe(r.host, name_bytes).c_str(),
                    Safe(r.node, name_bytes).c_str(), Name(r.phase), (long long)r.step,
                    (long long)r.micro, r.wall, r.budget_s, r.step_s, (long long)r.done);
  return std::string(buf, size_t(n > 0 ? std::min(n, int(sizeof buf) - 1) : 0));
}

// A whole decimal integer in [lo, hi], nothing else in the token.
bool Int(std::string_view v, int64_t lo, int64_t hi, int64_t* out) {
  int64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty() || x < lo || x > hi) {
    return false;
  }
  *out = x;
  return true;
}

// A whole decimal number, finite, in [lo, hi].
bool Real(std::string_view v, double lo, double hi, double* out) {
  double x = 0;
  const auto [end, ec] =
      std::from_chars(v.data(), v.data() + v.size(), x, std::chars_format::general);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty() || !std::isfinite(x) || x < lo ||
      x > hi) {
    return false;
  }
  *out = x;
  return true;
}

// One key=value of a record into `r`; false when the value is not valid for the key. Unknown keys
// are skipped (a later trainer may add some); `seen` gets the key's bit, and a repeated key fails.
bool Field(const std::string& key, const std::string& v, HeartbeatRecord& r, unsigned* seen) {
  static const char* const kKeys[] = {"rank",  "pid",  "host",     "node",   "phase", "step",
                                      "micro", "wall", "budget_s", "step_s", "done"};
  size_t k = 0;
  while (k < std::size(kKeys) && key != kKeys[k]) ++k;
  if (k == std::size(kKeys)) return true;
  if (*seen & (1u << k)) return false;
  *seen |= 1u << k;
  switch (k) {
    case 0:
      return Int(v, 0, kHeartbeatMaxRank - 1, &r.rank);
    case 1:
      return Int(v, 1, kHeartbeatMaxPid, &r.pid);
    case 2:
      r.host = v;
      return !v.empty();
    case 3:
      r.node = v;
      return !v.empty();
    case 4: {
      const auto p = Find<HeartbeatPhase>(v);
      if (p) r.phase = *p;
      return p.has_value();
    }
    case 5:
      return Int(v, 0, kHeartbeatMaxCount, &r.step);
    case 6:
      return Int(v, 0, kHeartbeatMaxCount, &r.micro);
    case 7:
      return Real(v, 1e-300, 1e300, &r.wall) && r.wall > 0;
    case 8:
      return Real(v, 0, kHeartbeatMaxSeconds, &r.budget_s);
    case 9:
      return Real(v, 0, kHeartbeatMaxSeconds, &r.step_s);
    default:
      return Int(v, 0, kHeartbeatMaxCount, &r.done);
  }
}

}  // namespace

std::string FormatHeartbeat(const HeartbeatRecord& r) {
  std::string out = Text(r, kMaxNameBytes);
  // Long names give way to the numbers: the record must end with " end" to count.
  if (out.size() > kHeartbeatRecordBytes - 1) {
    const size_t over = out.size() - (kHeartbeatRecordBytes - 1);
    const size_t cut = (over + 1) / 2;
    out = Text(r, cut < kMaxNameBytes ? kMaxNameBytes - cut : 1);
  }
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
  unsigned seen = 0;
  std::string tok;
  while (in >> tok) {
    if (tok == "end") {
      ended = true;
      break;
    }
    const size_t eq = tok.find('=');
    if (eq == std::string::npos) return std::nullopt;
    if (!Field(tok.substr(0, eq), tok.substr(eq + 1), r, &seen)) return std::nullopt;
  }
  // Every field but `done` (bit 10) is required; nothing but padding after " end".
  constexpr unsigned kRequired = (1u << 10) - 1;
  if (!ended || (seen & kRequired) != kRequired || (in >> tok)) return std::nullopt;
  return r;
}

}  // namespace baton
