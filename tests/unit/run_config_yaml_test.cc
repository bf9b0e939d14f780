// Strict YAML under the run config: unknown and repeated keys, a second document, tagged
// strings, malformed text, and the capped error list.
#include "schema/run_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/unit/run_config_fixture.h"

namespace baton {
namespace {

using test::RunConfigTest;

TEST_F(RunConfigTest, UnknownKeysAndSections) {
  const std::string e = Error(std::string(kMinimal) + "optim: {lr: 0.1, learning_rate: 0.1}\n");
  EXPECT_NE(e.find("cfg.yaml:3:18: optim.learning_rate: unknown key"), std::string::npos) << e;
  const std::string e2 = Error(std::string(kMinimal) + "trainer: {steps: 3}\n");
  EXPECT_NE(e2.find("cfg.yaml:3:1: trainer: unknown section"), std::string::npos) << e2;
}

TEST_F(RunConfigTest, MalformedYamlNamesFileAndLine) {
  const std::string e = Error("run: {steps: 10\ndata: [\n");
  EXPECT_NE(e.find("cfg.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed YAML"), std::string::npos) << e;
  EXPECT_NE(Error("").find("got an empty file"), std::string::npos);
  EXPECT_NE(Error("- 1\n- 2\n").find("expected a mapping with sections"), std::string::npos);
}

TEST_F(RunConfigTest, RepeatedKeysAndSectionsNameBothPlaces) {
  // A repeated section: YAML readers keep one of the two silently.
  std::string e = Error("run: {steps: 10}\ndata: {path: data}\nrun:\n  steps: 20\n");
  EXPECT_NE(
      e.find("cfg.yaml:3:1: run: repeated section, first given at " + (tmp_ / "cfg.yaml") + ":1:1"),
      std::string::npos)
      << e;
  // A repeated key, block style; the same value twice is still refused.
  e = Error("run:\n  steps: 10\n  seed: 1\n  steps: 10\ndata: {path: data}\n");
  EXPECT_NE(e.find("cfg.yaml:4:3: run.steps: repeated key, first given at " + (tmp_ / "cfg.yaml") +
                   ":2:3"),
            std::string::npos)
      << e;
  // Flow style, and a quoted spelling of the same key.
  e = Error("run: {steps: 10}\ndata: {path: data, \"batch_size\": 2, batch_size: 3}\n");
  EXPECT_NE(e.find("cfg.yaml:2:37: data.batch_size: repeated key, first given at " +
                   (tmp_ / "cfg.yaml") + ":2:20"),
            std::string::npos)
      << e;
  // At any depth, inside lists too.
  e = Error(std::string(kMinimal) + "optim: {betas: [{a: 1, a: 2}, 0.9]}\n");
  EXPECT_NE(e.find("cfg.yaml:3:24: optim.betas[0].a: repeated key"), std::string::npos) << e;
  // A key repeated in different sections is fine (the existing suite has eps twice).
  EXPECT_TRUE(Parse(std::string(kMinimal) + "model: {eps: 1.0e-6}\noptim: {eps: 1.0e-8}\n").ok());
}

TEST_F(RunConfigTest, SecondDocumentIsRefusedNamingItsLine) {
  std::string e = Error(std::string(kMinimal) + "---\nrun: {steps: 5}\n");
  EXPECT_NE(e.find("cfg.yaml:3:1: a second YAML document starts here"), std::string::npos) << e;
  // Even an empty one: a stray '---' means the file is not what its author thinks.
  e = Error(std::string(kMinimal) + "---\n");
  EXPECT_NE(e.find("cfg.yaml:3:1: a second YAML document starts here"), std::string::npos) << e;
  // An explicit start of the one document, and an explicit end, are fine.
  EXPECT_TRUE(Parse("---\n" + std::string(kMinimal) + "...\n").ok());
}

TEST_F(RunConfigTest, StrTaggedNumbersAreStrings) {
  std::string e = Error("run: {steps: !!str 10}\ndata: {path: data}\n");
  EXPECT_NE(e.find("run.steps: expected an integer, got '10' (quoted or tagged !!str, so a string"),
            std::string::npos)
      << e;
  e = Error(std::string(kMinimal) + "optim: {lr: !!str 1.0e-3, weight_decay: '0.1'}\n");
  EXPECT_NE(e.find("optim.lr: expected a finite number, got '1.0e-3' (quoted or tagged !!str"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("optim.weight_decay: expected a finite number, got '0.1' (quoted"),
            std::string::npos)
      << e;
  e = Error(std::string(kMinimal) + "optim: {betas: [!!str 0.9, 0.95]}\n");
  EXPECT_NE(e.find("optim.betas: expected a list of two numbers"), std::string::npos) << e;
  // An explicit number tag is a number.
  auto r = Parse("run: {steps: !!int 10}\ndata: {path: data}\noptim: {lr: !!float 2.0e-3}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->run.steps, 10);
  EXPECT_DOUBLE_EQ(r->optim.lr, 2e-3);
  EXPECT_NE(Error("run: {steps: !!float 10}\ndata: {path: data}\n")
                .find("run.steps: expected an integer"),
            std::string::npos);
}

TEST_F(RunConfigTest, ErrorListIsCappedWithACount) {
  std::string yaml = std::string(kMinimal) + "optim:\n";
  for (int i = 0; i < 35; ++i) yaml += "  unknown_" + std::to_string(i) + ": 1\n";
  const std::string e = Error(yaml);
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), static_cast<long>(kMaxRunConfigErrors)) << e;
  EXPECT_NE(e.find("optim.unknown_0: unknown key"), std::string::npos) << e;
  EXPECT_EQ(e.find("optim.unknown_20: unknown key"), std::string::npos) << e;
  EXPECT_NE(e.find("\n... and 15 more"), std::string::npos) << e;
  EXPECT_EQ(e.substr(e.rfind('\n') + 1), "... and 15 more");
}

}  // namespace
}  // namespace baton
