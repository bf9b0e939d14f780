#include "orchestrator/nodes/host_name.h"

#include <cctype>

namespace baton {

namespace {

bool ValidLabel(std::string_view label) {
  // One label of a host name: 1-63 bytes of [A-Za-z0-9-], no '-' at either end.
  constexpr size_t kMaxLabelBytes = 63;
  if (label.empty() || label.size() > kMaxLabelBytes) return false;
  if (label.front() == '-' || label.back() == '-') return false;
  for (char c : label) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) return false;
  }
  return true;
}

}  // namespace

bool ValidHostName(std::string_view name) {
  if (name.empty() || name.size() > kMaxHostNameBytes) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    const std::string_view label =
        name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!ValidLabel(label)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string JoinHostNames(const std::vector<std::string>& hosts) {
  std::string out;
  for (const std::string& h : hosts) out += (out.empty() ? "" : ",") + h;
  return out;
}

}  // namespace baton
