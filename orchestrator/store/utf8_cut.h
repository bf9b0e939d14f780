// CutUtf8: the one cut of a text to a byte cap, for every text field the orchestrator bounds
// before it keeps or sends it (a trainer's message, a hang's stacks, an incident's cause and
// excerpt). Each field names its own cap next to its record; this says only where a cut falls:
// never inside a UTF-8 sequence, because the JSON writers that print a kept text later refuse a
// broken one. Only the orchestrator cuts text, so the unit lives here and not in schema/. Pure
// functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace baton {

// Which part of a text that does not fit is kept.
enum class CutKeep { kStart, kEnd };

// `text` itself when it fits in `max_bytes`. Otherwise its first (kStart) or last (kEnd) at most
// `max_bytes` bytes that neither start nor end inside a UTF-8 sequence, with `mark` (what says
// the text was cut) on the side of the cut; `mark` is not counted in `max_bytes`.
std::string CutUtf8(std::string_view text, size_t max_bytes, CutKeep keep = CutKeep::kStart,
                    std::string_view mark = "");

}  // namespace baton
