// The trainer's heartbeat writer against what can sit at its path (docs/bad_input.md, "Integrity
// round 3: hang watch and heartbeats"): a symbolic link is never followed, a FIFO never blocks
// the rank, a file renamed over its own is replaced by a new one of its own, and a save reports
// the bytes it moves.
#include "trainer/train/heartbeat.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "schema/run_folder.h"
#include "tests/common/temp_dir.h"
#include "trainer/ckpt/transfer_progress.h"

namespace baton {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::optional<HeartbeatRecord> RecordAt(const std::string& path) {
  return ParseHeartbeat(Slurp(path));
}

void Pause(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

TEST(HeartbeatWriter, OutsideSlurmTheRecordNamesThisHost) {
  test::TempDir tmp;
  StartHeartbeat(tmp.path(), 0, "");
  const std::optional<HeartbeatRecord> r = RecordAt(RunFolder{tmp.path()}.HeartbeatFile(0));
  ASSERT_TRUE(r);
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(r->node, host);
  EXPECT_EQ(r->host, host);
}

TEST(HeartbeatWriter, ASymbolicLinkIsNotFollowed) {
  test::TempDir tmp;
  const RunFolder folder{tmp.path()};
  std::filesystem::create_directories(folder.HeartbeatDir());
  std::ofstream(tmp / "precious") << "keep me";
  std::filesystem::create_symlink(tmp / "precious", folder.HeartbeatFile(0));
  testing::internal::CaptureStderr();
  StartHeartbeat(tmp.path(), 0, "");
  Beat(HeartbeatPhase::kMicroStep, 1, 0);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(Slurp(tmp / "precious"), "keep me");
  EXPECT_NE(err.find("it is a symbolic link; not following it"), std::string::npos) << err;
  EXPECT_NE(err.find("carrying on without heartbeats"), std::string::npos) << err;
}

TEST(HeartbeatWriter, AFifoNeverBlocksTheRank) {
  test::TempDir tmp;
  const RunFolder folder{tmp.path()};
  std::filesystem::create_directories(folder.HeartbeatDir());
  const std::string fifo = folder.HeartbeatFile(0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  testing::internal::CaptureStderr();
  auto started = std::async(std::launch::async, [&] { StartHeartbeat(tmp.path(), 0, ""); });
  if (started.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // let the blocked open finish
    started.wait();
    if (fd >= 0) ::close(fd);
    testing::internal::GetCapturedStderr();
    FAIL() << "StartHeartbeat blocked on a FIFO";
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("it is a FIFO, not a regular file"), std::string::npos) << err;
}

TEST(HeartbeatWriter, AFileRenamedOverItsOwnIsReplacedByANewOne) {
  test::TempDir tmp;
  const std::string path = RunFolder{tmp.path()}.HeartbeatFile(2);
  testing::internal::CaptureStderr();
  StartHeartbeat(tmp.path(), 2, "node-7");
  Beat(HeartbeatPhase::kMicroStep, 7, 0);
  ASSERT_TRUE(RecordAt(path));
  EXPECT_EQ(RecordAt(path)->node, "node-7");
  // A restore puts an old copy in its place.
  std::ofstream(tmp / "old") << "an old copy";
  std::filesystem::rename(tmp / "old", path);
  Pause(1.1);  // identity checks come at most once a second
  Beat(HeartbeatPhase::kUpdate, 7, 2);
  std::optional<HeartbeatRecord> r = RecordAt(path);
  ASSERT_TRUE(r) << Slurp(path);
  EXPECT_EQ(r->rank, 2);
  EXPECT_EQ(r->phase, HeartbeatPhase::kUpdate);
  EXPECT_EQ(r->pid, ::getpid());
  // Removed altogether: written again too.
  std::filesystem::remove(path);
  Pause(1.1);
  Beat(HeartbeatPhase::kMicroStep, 8, 0);
  ASSERT_TRUE(RecordAt(path));
  EXPECT_EQ(RecordAt(path)->step, 8);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("was replaced by another file; writing a new one"), std::string::npos) << err;
  EXPECT_EQ(err.find("carrying on without heartbeats"), std::string::npos) << err;
}

TEST(HeartbeatWriter, LoadsAndSavesBeatTheBytesTheyMove) {
  test::TempDir tmp;
  const std::string path = RunFolder{tmp.path()}.HeartbeatFile(0);
  StartHeartbeat(tmp.path(), 0, "");
  Beat(HeartbeatPhase::kSave, 4, 0, 60);
  const double wall0 = RecordAt(path)->wall;
  Pause(0.6);
  NoteTransferred(4 << 20);
  std::optional<HeartbeatRecord> r = RecordAt(path);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->phase, HeartbeatPhase::kSave);
  EXPECT_EQ(r->done, 4 << 20);
  EXPECT_GT(r->wall, wall0);
  // Bytes of a background save while the rank trains are not this phase's progress.
  Beat(HeartbeatPhase::kMicroStep, 5, 0);
  Pause(0.6);
  NoteTransferred(1 << 20);
  EXPECT_EQ(RecordAt(path)->done, 0);
  EXPECT_EQ(RecordAt(path)->phase, HeartbeatPhase::kMicroStep);
}

}  // namespace
}  // namespace baton
