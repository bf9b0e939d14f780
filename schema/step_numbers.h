// Step numbers: how a step is shown to a person, the one rule for the trainer's messages, the
// CLI's text, the web API's display fields and the run page.
//
// Records count two ways, and neither changes here: an event's or a step row's `step` is the
// 0-based index of the optimizer step computed (docs/events.md), and `step0` / `last_step` /
// a checkpoint's step count finished steps. A person reads 1-based step numbers: the step at
// index i is step i + 1, so an attempt with step0 = 73 that reached last_step = 300 ran steps
// 74..300, and a checkpoint at 73 holds steps 1..73. Attempts are numbered the same way: the
// first attempt of a run is attempt 1 (CLI, API, page and alerts alike). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace baton {

// The number a person reads for the step at 0-based index `index`.
constexpr int64_t StepNumber(int64_t index) { return index + 1; }

inline std::optional<int64_t> StepNumber(std::optional<int64_t> index) {
  if (!index) return std::nullopt;
  return StepNumber(*index);
}

// The first and last step numbers of the 0-based index range [from, until); `until <= from`
// is an empty range (first > last).
struct StepNumberRange {
  int64_t first = 1, last = 0;
  bool empty() const { return last < first; }
};
constexpr StepNumberRange StepNumbersOf(int64_t from, int64_t until) {
  return StepNumberRange{StepNumber(from), until};
}

// The number a person reads for an attempt at 0-based position `position` in its run's list.
constexpr int64_t AttemptNumber(int64_t position) { return position + 1; }

}  // namespace baton
