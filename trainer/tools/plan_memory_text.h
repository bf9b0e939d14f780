// `baton-train plan-memory`'s text form: the report (schema/memory_plan_report.h), one category a
// line with its bytes and GiB, the configured checkpointing's figures first and the other
// settings' beside them, then the limit. For people; `--json` is the form programs read.
// Writes to stdout; thread-compatible.
#pragma once

#include <cstdint>

#include "schema/memory_plan_report.h"

namespace baton {

// `dim` and `layers` are the model's width and depth (only the text names them).
void PrintMemoryPlanText(const MemoryPlanReport& r, int64_t dim, int64_t layers);

}  // namespace baton
