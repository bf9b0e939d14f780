// The storage forecast's arithmetic (schema/storage_forecast.h): the retention rule against the
// set it states, computed here independently, the save steps, the footprint's parts and the
// free space of a real folder.
#include "schema/storage_forecast.h"

#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <set>

#include "tests/common/temp_dir.h"

namespace baton {
namespace {

// The kept set as the docs state it: the newest keep_last saves and every keep_every multiple.
std::set<int64_t> StatedKeptSet(int64_t steps, int64_t every, int64_t keep_last,
                                int64_t keep_every) {
  std::vector<int64_t> saves;
  for (int64_t s = 1; s <= steps; ++s) {
    if (s % every == 0 || s == steps) saves.push_back(s);
  }
  std::set<int64_t> kept;
  for (size_t i = saves.size() > size_t(keep_last) ? saves.size() - size_t(keep_last) : 0;
       i < saves.size(); ++i) {
    kept.insert(saves[i]);
  }
  for (int64_t s : saves) {
    if (keep_every > 0 && s % keep_every == 0) kept.insert(s);
  }
  return kept;
}

TEST(StorageForecast, RetainedCountIsTheStatedSet) {
  for (int64_t steps = 1; steps <= 60; ++steps) {
    for (int64_t every : {1, 2, 3, 7, 10, 200}) {
      for (int64_t keep_last : {1, 2, 5}) {
        for (int64_t keep_every : {0, 1, 4, 6, 9}) {
          const auto stated = StatedKeptSet(steps, every, keep_last, keep_every);
          EXPECT_EQ(RetainedCount(steps, every, keep_last, keep_every), int64_t(stated.size()))
              << steps << " " << every << " " << keep_last << " " << keep_every;
        }
      }
    }
  }
}

// The trainer's rule, walked over the saves as they happen, ends with the stated set too.
TEST(StorageForecast, RetentionKeepsOverARunIsTheStatedSet) {
  for (int64_t keep_last : {1, 3}) {
    for (int64_t keep_every : {0, 4}) {
      std::vector<int64_t> held;  // newest first
      for (int64_t s = 2; s <= 20; s += 2) {
        held.insert(held.begin(), s);
        std::vector<RetainedCheckpoint> listed;
        for (int64_t h : held) listed.push_back({h, true});
        const std::vector<bool> keep = RetentionKeeps(listed, keep_last, keep_every);
        std::vector<int64_t> next;
        for (size_t i = 0; i < held.size(); ++i) {
          if (keep[i]) next.push_back(held[i]);
        }
        held = next;
      }
      EXPECT_EQ(std::set<int64_t>(held.begin(), held.end()),
                StatedKeptSet(20, 2, keep_last, keep_every));
    }
  }
}

TEST(StorageForecast, FootprintIsItsParts) {
  StorageInputs in;
  in.checkpoint_bytes = 1000;
  in.steps = 12, in.every = 2, in.keep_last = 3, in.keep_every = 4;
  const StorageForecast f = ForecastStorage(in);
  EXPECT_EQ(f.retained, 4);  // 12, 10, 8 and 4
  EXPECT_EQ(f.checkpoints_bytes, 4000);
  EXPECT_EQ(f.footprint_bytes, f.checkpoints_bytes + f.events_bytes + f.logs_bytes);
  // Billions of steps are counted, not listed.
  EXPECT_EQ(RetainedCount(int64_t(1) << 40, 1, 5, 0), 5);
  EXPECT_EQ(RetainedCount(int64_t(1) << 40, 1, 1, int64_t(1) << 20), int64_t(1) << 20);
}

TEST(StorageForecast, NewestFiniteSurvivesNewerUnchecked) {
  // Newest first: two checkpoints not checked finite, then a finite one past keep_last.
  const std::vector<bool> keep =
      RetentionKeeps({{30, false}, {20, false}, {10, true}, {5, true}}, 2, 0);
  EXPECT_EQ(keep, (std::vector<bool>{true, true, true, false}));
}

TEST(StorageForecast, EventsGrowWithSteps) {
  StorageInputs in;
  in.checkpoint_bytes = 1;
  in.steps = 100;
  const StorageForecast a = ForecastStorage(in);
  in.steps = 1000;
  const StorageForecast b = ForecastStorage(in);
  EXPECT_GT(b.events_bytes, a.events_bytes);
  EXPECT_GE(b.events_bytes - a.events_bytes, 900 * kStepEventBytes);
}

TEST(StorageForecast, JudgeTakesTheSmallerOfFreeAndQuota) {
  StorageForecast f;
  f.footprint_bytes = 100;
  f.free_bytes = 200;
  Judge(&f);
  EXPECT_TRUE(f.fits);
  f.quota_free_bytes = 99;
  Judge(&f);
  EXPECT_FALSE(f.fits);
  f.quota_free_bytes.reset();
  f.free_bytes = 99;
  Judge(&f);
  EXPECT_FALSE(f.fits);
  const auto j = f.ToJson();
  EXPECT_EQ(j.at("footprint_bytes"), 100);
  EXPECT_EQ(j.at("free_bytes"), 99);
  EXPECT_EQ(j.at("fits"), false);
}

TEST(StorageForecast, FreeBytesOfARealFolder) {
  test::TempDir dir;
  struct statvfs st {};
  ASSERT_EQ(::statvfs(dir.path().c_str(), &st), 0);
  Result<int64_t> free = FreeBytes(dir.path());
  ASSERT_TRUE(free.ok()) << free.status().ToString();
  const int64_t expected = int64_t(st.f_bavail) * int64_t(st.f_frsize);
  // Other writers share the filesystem: within 1 % of a moment earlier.
  EXPECT_NEAR(double(*free), double(expected), 0.01 * double(expected) + 1e6);
  const Result<int64_t> missing = FreeBytes(dir.path() + "/no/such/folder");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().exit_code(), 74);
  EXPECT_NE(missing.status().message().find("no/such/folder"), std::string::npos);
}

TEST(StorageForecast, ByteText) {
  EXPECT_EQ(ByteText(999), "999 B");
  EXPECT_EQ(ByteText(1234), "1.23 kB");
  EXPECT_EQ(ByteText(45600000), "45.6 MB");
  EXPECT_EQ(ByteText(123000000000), "123 GB");
}

}  // namespace
}  // namespace baton
