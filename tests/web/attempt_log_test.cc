// The log viewer's reader (orchestrator/history/attempt_log.h) and the evidence of how attempts
// ended: pages read backwards from the end at line starts; a job id that is a path, a log that
// is a symlink out of the run folder, or a logs/ folder that is one, are refused; a log not yet
// written is an empty page; the signal is derived from the trainer, the exit code or SLURM.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "orchestrator/history/attempt_log.h"
#include "orchestrator/store/attempt_evidence.h"
#include "tests/common/temp_dir.h"

namespace fs = std::filesystem;

namespace baton {
namespace {

using test::TempDir;

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

AttemptRecord Job(const std::string& id) {
  AttemptRecord a;
  a.job_id = id;
  return a;
}

TEST(AttemptLog, PagesBackwardsFromTheEndAtLineStarts) {
  TempDir tmp;
  const std::string run = tmp / "run";
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "line " + std::to_string(i) + "\n";
  Write(run + "/logs/42.out", text);
  LogPageRequest req;
  req.limit = 100;
  Result<nlohmann::json> page = ReadAttemptLogPage(run, Job("42"), req);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ((*page)["path"], "logs/42.out");
  EXPECT_EQ((*page)["size"], text.size());
  EXPECT_EQ((*page)["to"], text.size());
  const std::string tail = (*page)["text"];
  EXPECT_EQ(tail.back(), '\n');
  EXPECT_EQ(tail.substr(0, 5), "line ");  // a whole line first
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
  EXPECT_TRUE((*page)["more_before"].get<bool>());
  // The previous page ends where this one begins; paging to the start covers the file once.
  std::string all = tail;
  int64_t from = (*page)["from"];
  while (from > 0) {
    req.before = from;
    page = ReadAttemptLogPage(run, Job("42"), req);
    ASSERT_TRUE(page.ok());
    EXPECT_EQ((*page)["to"], from);
    all = (*page)["text"].get<std::string>() + all;
    from = (*page)["from"];
  }
  EXPECT_EQ(all, text);
}

TEST(AttemptLog, NeverReadsOutsideTheRunFolder) {
  TempDir tmp;
  const std::string run = tmp / "run";
  Write(tmp / "secret.txt", "secret\n");
  Write(run + "/logs/ok.out", "fine\n");
  LogPageRequest req;
  // A job id that is a path never names a file.
  for (const char* id : {"../secret", "../../secret.txt", "a/b", ".hidden", "", "x y"}) {
    Result<nlohmann::json> page = ReadAttemptLogPage(run, Job(id), req);
    EXPECT_EQ(page.status().code(), Code::kNotFound) << id;
    EXPECT_FALSE(AttemptLogPath(Job(id)).has_value()) << id;
  }
  // A log that is a symlink out of the run folder is refused, not followed.
  fs::create_symlink(tmp / "secret.txt", run + "/logs/7.out");
  Result<nlohmann::json> page = ReadAttemptLogPage(run, Job("7"), req);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), Code::kNotFound);
  EXPECT_NE(page.status().message().find("outside the run folder"), std::string::npos);
  // So is a logs/ folder that points elsewhere.
  const std::string run2 = tmp / "run2";
  fs::create_directories(run2);
  fs::create_directories(tmp / "elsewhere");
  Write(tmp / "elsewhere/8.out", "secret\n");
  fs::create_directory_symlink(tmp / "elsewhere", run2 + "/logs");
  page = ReadAttemptLogPage(run2, Job("8"), req);
  EXPECT_FALSE(page.ok());
  // A symlink inside the folder is fine.
  fs::create_symlink(run + "/logs/ok.out", run + "/logs/9.out");
  page = ReadAttemptLogPage(run, Job("9"), req);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ((*page)["text"], "fine\n");
  // Nothing written yet: an empty page, not an error.
  page = ReadAttemptLogPage(run, Job("10"), req);
  ASSERT_TRUE(page.ok());
  EXPECT_FALSE((*page)["exists"].get<bool>());
}

TEST(AttemptEvidence, SignalFromTheBestWitness) {
  AttemptRecord a;
  EXPECT_EQ(AttemptSignal(a), "");
  a.slurm_exit_code = "0:9";
  EXPECT_EQ(AttemptSignal(a), "KILL");
  a.exit_code = 139;
  EXPECT_EQ(AttemptSignal(a), "SEGV");
  a.trainer_signal = Signal::kUsr1;
  EXPECT_EQ(AttemptSignal(a), "USR1");
  AttemptRecord b;
  b.exit_code = 79;
  b.slurm_exit_code = "79:0";
  EXPECT_EQ(AttemptSignal(b), "");
  EXPECT_EQ(SignalName(40), "signal 40");
}

}  // namespace
}  // namespace baton
