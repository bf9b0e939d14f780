// The quota tools' answers as storage_check.h reads them: `lfs quota -q` and `quota -w -p`
// lines (kB, '*' when over, a long filesystem name on its own line), the smaller non-zero limit
// less what is used, and no quota when nothing is limited or nothing is read.
#include "orchestrator/submit/storage_check.h"

#include <gtest/gtest.h>

namespace baton {
namespace {

TEST(StorageQuota, LfsQuotaLine) {
  // filesystem, kbytes, quota, limit, grace, files, quota, limit, grace
  EXPECT_EQ(ParseQuotaLeft("/lustre/scratch 1000 5000 6000 - 12 0 0 -\n"),
            std::optional<int64_t>(4000 * 1024));
}

TEST(StorageQuota, HardLimitWhenNoSoft) {
  EXPECT_EQ(ParseQuotaLeft("/lustre 1000 0 3000 - 12 0 0 -\n"),
            std::optional<int64_t>(2000 * 1024));
}

TEST(StorageQuota, QuotaToolWithHeaderAndWrappedName) {
  const std::string out =
      "Disk quotas for user alice (uid 1000):\n"
      "     Filesystem  blocks   quota   limit   grace   files   quota   limit   grace\n"
      "/dev/mapper/a-very-long-volume-name\n"
      "                 7000*   6000    9000    3600     10       0       0       0\n";
  EXPECT_EQ(ParseQuotaLeft(out), std::optional<int64_t>(0));  // over the soft limit
}

TEST(StorageQuota, UnlimitedOrUnreadIsNoQuota) {
  EXPECT_EQ(ParseQuotaLeft("/home 1000 0 0 0 12 0 0 0\n"), std::nullopt);
  EXPECT_EQ(ParseQuotaLeft("quota: no filesystems with quota detected\n"), std::nullopt);
  EXPECT_EQ(ParseQuotaLeft(""), std::nullopt);
}

}  // namespace
}  // namespace baton
