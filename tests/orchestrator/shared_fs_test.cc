// SharedFs: the statfs magic table and its verdict, case by case (NFS, Lustre, GPFS, SMB, FUSE,
// Ceph refused; ext4, xfs, btrfs, tmpfs, overlay open; an unknown magic opens), the override,
// and the real check on this host's temp folder. The refusal on a real FUSE mount is
// tests/orchestrator/shared_fs_cli_test.sh (cli.store_shared_fs).
#include "orchestrator/store/shared_fs.h"

#include <gtest/gtest.h>

#include <sstream>

#include "orchestrator/store/store.h"
#include "test_util.h"

namespace baton {
namespace {

struct Case {
  uint32_t magic;
  const char* name;
};

// The magics as linux/magic.h (and Lustre's, GPFS's own headers) define them, written out here
// so that a typo in the table fails.
constexpr Case kShared[] = {
    {0x6969, "NFS"},        {0x517B, "SMB"},      {0xFF534D42, "CIFS"},  {0xFE534D42, "SMB2"},
    {0x0BD00BD0, "Lustre"}, {0x47504653, "GPFS"}, {0x65735546, "FUSE"},  {0x00C36400, "Ceph"},
    {0x19830326, "BeeGFS"}, {0x01161970, "GFS2"}, {0x7461636F, "OCFS2"}, {0x5346414F, "AFS"},
    {0x6B414653, "AFS"},    {0x73757245, "Coda"}, {0x564C, "NCP"},       {0x01021997, "9p"},
};
constexpr Case kLocal[] = {
    {0xEF53, "ext4"},      {0x58465342, "xfs"},     {0x9123683E, "btrfs"},
    {0x01021994, "tmpfs"}, {0x794C7630, "overlay"},
};

TEST(SharedFs, SharedFilesystemsAreRefusedUnlessAllowed) {
  for (const Case& c : kShared) {
    const auto kind = ClassifyFilesystem(c.magic);
    ASSERT_TRUE(kind.has_value()) << c.name;
    EXPECT_STREQ(kind->name, c.name);
    EXPECT_TRUE(kind->shared) << c.name;
    EXPECT_EQ(JudgeStoreFilesystem(c.magic, /*allow_shared=*/false), SharedFsVerdict::kRefuse)
        << c.name;
    EXPECT_EQ(JudgeStoreFilesystem(c.magic, /*allow_shared=*/true), SharedFsVerdict::kWarn)
        << c.name;
  }
}

TEST(SharedFs, LocalFilesystemsOpen) {
  for (const Case& c : kLocal) {
    const auto kind = ClassifyFilesystem(c.magic);
    ASSERT_TRUE(kind.has_value()) << c.name;
    EXPECT_STREQ(kind->name, c.name);
    EXPECT_FALSE(kind->shared) << c.name;
    for (bool allow : {false, true}) {
      EXPECT_EQ(JudgeStoreFilesystem(c.magic, allow), SharedFsVerdict::kOpen) << c.name;
    }
  }
}

TEST(SharedFs, AnUnknownMagicIsTakenAsLocal) {
  EXPECT_FALSE(ClassifyFilesystem(0x12345678).has_value());
  EXPECT_EQ(JudgeStoreFilesystem(0x12345678, /*allow_shared=*/false), SharedFsVerdict::kOpen);
}

TEST(SharedFs, TheMessageNamesThePathTheFilesystemAndPostgreSql) {
  const std::string m = SharedFsMessage("/lab/home/baton.db", "/lab/home", {0x6969, "NFS", true});
  EXPECT_NE(m.find("/lab/home/baton.db"), std::string::npos) << m;
  EXPECT_NE(m.find("folder /lab/home is on NFS"), std::string::npos) << m;
  EXPECT_NE(m.find("0x00006969"), std::string::npos) << m;
  EXPECT_NE(m.find("PostgreSQL"), std::string::npos) << m;
  EXPECT_NE(m.find("BATON_STORE=postgresql://"), std::string::npos) << m;
}

// This host's temp folder is local (ext4, overlay or tmpfs): no refusal, no warning, and the
// override is not even read there.
TEST(SharedFs, TheTempFolderIsNotRefused) {
  test::TempDir dir;
  for (const char* allow : {static_cast<const char*>(nullptr), "", "0", "1", "yes"}) {
    std::ostringstream warn;
    const Status st = CheckSqliteStoreFilesystem(dir / "baton.db", allow, warn);
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(warn.str(), "");
  }
  auto store = Store::Open(dir / "home/baton.db");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
}

TEST(SharedFs, AFolderThatCannotBeExaminedIsAnIoError) {
  test::TempDir dir;
  std::ostringstream warn;
  const Status st = CheckSqliteStoreFilesystem(dir / "missing/baton.db", nullptr, warn);
  EXPECT_EQ(st.code(), Code::kIo) << st.ToString();
  EXPECT_NE(st.message().find(dir / "missing"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace baton
