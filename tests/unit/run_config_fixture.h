// The fixture the run config's tests share (run_config_*_test.cc, one file per concern): parses
// YAML as if read from <tmp>/cfg.yaml, so that `data: data` resolves to the fixture's own
// folder, and returns a refused config's message after checking it is a 78. One TempDir per
// test; not thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "schema/run_config.h"
#include "schema/status.h"
#include "tests/common/temp_dir.h"

namespace baton::test {

class RunConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(tmp_ / "data"); }
  // Parses `yaml` as if read from <tmp>/cfg.yaml (so data: data resolves to <tmp>/data).
  Result<RunConfig> Parse(const std::string& yaml, const RunConfigOptions& options = {}) {
    return ParseRunConfig(yaml, tmp_ / "cfg.yaml", options);
  }
  std::string Error(const std::string& yaml, const RunConfigOptions& options = {}) {
    auto r = Parse(yaml, options);
    EXPECT_FALSE(r.ok()) << "expected an error for:\n" << yaml;
    if (r.ok()) return "";
    EXPECT_EQ(r.status().code(), Code::kConfig);
    EXPECT_EQ(r.status().exit_code(), 78);
    return r.status().message();
  }
  static constexpr const char* kMinimal = "run: {steps: 10}\ndata: {path: data}\n";
  TempDir tmp_;
};

}  // namespace baton::test
