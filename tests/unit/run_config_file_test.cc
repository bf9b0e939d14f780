// What the run config reads from disk: the dataset folder (its path and its episode count) and
// the config file itself (its kind and its size), never blocking on a FIFO.
#include "schema/run_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "tests/unit/run_config_fixture.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using test::RunConfigTest;

TEST_F(RunConfigTest, MissingDataPathKey) {
  const std::string e = Error("run: {steps: 10}\ndata: {batch_size: 2}\n");
  EXPECT_NE(e.find("data.path: required key is missing"), std::string::npos) << e;
  const std::string e2 = Error("run: {steps: 10}\n");
  EXPECT_NE(e2.find("data.path: required key is missing"), std::string::npos) << e2;
}

TEST_F(RunConfigTest, DataPathThatDoesNotExist) {
  const std::string e = Error("run: {steps: 10}\ndata: {path: nowhere/at/all}\n");
  EXPECT_NE(e.find("data.path: no such dataset folder '" + (tmp_ / "nowhere/at/all") + "'"),
            std::string::npos)
      << e;
}

TEST_F(RunConfigTest, BatchSizeLargerThanTheDataset) {
  fs::create_directories(tmp_ / "data/meta");
  const std::string index = tmp_ / "data/meta/episodes.jsonl";
  // Three episodes; blank lines do not count, as in the trainer's index reader.
  std::ofstream(index) << "{\"id\": 1}\n\n{\"id\": 2}\n  \n{\"id\": 3}";
  std::string e = Error("run: {steps: 10}\ndata: {path: data, batch_size: 4}\n");
  EXPECT_NE(e.find("cfg.yaml:2:32: data.batch_size: value 4 exceeds the dataset's 3 episodes (" +
                   index + ")"),
            std::string::npos)
      << e;
  e = Error(kMinimal);  // the default batch size (4) is checked too
  EXPECT_NE(e.find("data.batch_size: value 4 (the default) exceeds the dataset's 3 episodes"),
            std::string::npos)
      << e;
  EXPECT_TRUE(Parse("run: {steps: 10}\ndata: {path: data, batch_size: 3}\n").ok());
  // A bad batch_size is reported once, as such.
  e = Error("run: {steps: 10}\ndata: {path: data, batch_size: 0}\n");
  EXPECT_EQ(e.find("episodes"), std::string::npos) << e;

  // An index that is not a regular file is named, and never read (a FIFO would block).
  fs::remove(index);
  ASSERT_EQ(::mkfifo(index.c_str(), 0600), 0);
  auto pending = std::async(std::launch::async, [&] { return Error(kMinimal); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::ofstream unblock(index);  // lets the blocked reader finish before failing
    FAIL() << "validation blocked on a FIFO index";
  }
  e = pending.get();
  EXPECT_NE(e.find("data.path: " + index + " is a FIFO, not a regular file"), std::string::npos)
      << e;
}

TEST_F(RunConfigTest, ConfigThatIsNotARegularFileIsRefusedWithoutReadingIt) {
  const std::string dir = tmp_ / "cfg.d";
  fs::create_directories(dir);
  auto r = LoadRunConfig(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 78);
  EXPECT_NE(r.status().message().find(dir + ": cannot read the config file: it is a folder, not a "
                                            "regular file"),
            std::string::npos)
      << r.status().message();

  const std::string fifo = tmp_ / "cfg.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto pending = std::async(std::launch::async, [&] { return LoadRunConfig(fifo); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::ofstream unblock(fifo);
    FAIL() << "LoadRunConfig blocked on a FIFO";
  }
  r = pending.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 78);
  EXPECT_NE(r.status().message().find(fifo + ": cannot read the config file: it is a FIFO"),
            std::string::npos)
      << r.status().message();

  r = LoadRunConfig("/dev/zero");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/dev/zero: cannot read the config file: it is a character "
                                      "device"),
            std::string::npos)
      << r.status().message();
}

TEST_F(RunConfigTest, HugeConfigIsRefusedBeforeParsing) {
  const std::string path = tmp_ / "cfg.yaml";
  // Exactly at the limit: a valid config padded with a comment is read.
  std::string text = kMinimal;
  text += "#" + std::string(kMaxRunConfigBytes - text.size() - 2, 'x') + "\n";
  ASSERT_EQ(text.size(), static_cast<size_t>(kMaxRunConfigBytes));
  std::ofstream(path, std::ios::binary) << text;
  auto r = LoadRunConfig(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  // One byte more is refused, naming the file and the size.
  std::ofstream(path, std::ios::binary | std::ios::app) << "\n";
  r = LoadRunConfig(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 78);
  EXPECT_NE(r.status().message().find(path + ": the config file is 1048577 bytes, more than a run "
                                             "config's limit of 1048576 bytes"),
            std::string::npos)
      << r.status().message();
  // Text handed over directly is held to the same limit.
  auto parsed = ParseRunConfig(std::string(kMaxRunConfigBytes + 1, '#'), "big.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("big.yaml: 1048577 bytes is too large"),
            std::string::npos);
}

TEST_F(RunConfigTest, MissingFile) {
  auto r = LoadRunConfig(tmp_ / "absent.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 78);
  EXPECT_NE(r.status().message().find("absent.yaml: cannot read"), std::string::npos);
}

}  // namespace
}  // namespace baton
