#include "orchestrator/store/utf8_cut.h"

namespace baton {

namespace {

// A UTF-8 continuation byte (10xxxxxx): a character's second, third or fourth byte.
bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::string CutUtf8(std::string_view text, size_t max_bytes, CutKeep keep, std::string_view mark) {
  if (text.size() <= max_bytes) return std::string(text);
  if (keep == CutKeep::kEnd) {
    size_t start = text.size() - max_bytes;
    while (start < text.size() && IsContinuation(text[start])) ++start;
    return std::string(mark) + std::string(text.substr(start));
  }
  size_t end = max_bytes;
  while (end > 0 && IsContinuation(text[end])) --end;
  return std::string(text.substr(0, end)) + std::string(mark);
}

}  // namespace baton
