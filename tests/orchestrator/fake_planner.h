// FakePlanner: a stand-in for `baton-train plan-memory --json` in the submit and resume tests: a
// script that prints one fixed report (real figures are tests/integration's). Test-only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "schema/memory_plan_report.h"
#include "test_util.h"

namespace baton::test {

// Writes DIR/fake-plan-memory printing `report`; returns its path.
inline std::string FakePlanner(const std::string& dir, const MemoryPlanReport& report) {
  const std::filesystem::path bin = std::filesystem::path(dir) / "fake-plan-memory";
  std::filesystem::remove(bin);
  Append(bin, "#!/bin/sh\necho '" + report.ToJson().dump() + "'\n");
  std::filesystem::permissions(bin, std::filesystem::perms::owner_all);
  return bin.string();
}

// A report whose only figure is the one the grace check reads.
inline std::string FakePlanner(const std::string& dir, int64_t bytes_per_rank) {
  MemoryPlanReport report;
  report.checkpoint.bytes_per_rank_max = bytes_per_rank;
  return FakePlanner(dir, report);
}

}  // namespace baton::test
