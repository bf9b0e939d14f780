#include "trainer/data/prefetch_loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

namespace baton {
namespace {

TEST(PrefetchLoaderTest, DeliversEveryItemInOrder) {
  PrefetchLoader<int64_t> loader([](int64_t k) { return k * k; }, 100, 3);
  for (int64_t k = 0; k < 100; ++k) {
    auto v = loader.Next();
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(*v, k * k);
  }
  EXPECT_FALSE(loader.Next().has_value());
}

TEST(PrefetchLoaderTest, RunsAheadButNoFurtherThanDepth) {
  std::atomic<int64_t> produced{0};
  PrefetchLoader<int64_t> loader(
      [&](int64_t k) {
        ++produced;
        return k;
      },
      50, 4);
  for (int i = 0; i < 200 && produced.load() < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(produced.load(), 4) << "read ahead exactly `depth` items before anyone asked";
  EXPECT_EQ(*loader.Next(), 0);
}

TEST(PrefetchLoaderTest, ProducerErrorSurfacesAtItsItemOnTheConsumerThread) {
  PrefetchLoader<int64_t> loader(
      [](int64_t k) -> int64_t {
        if (k == 3) throw std::runtime_error("episode 3 is corrupt");
        return k;
      },
      10, 2);
  for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(*loader.Next(), k);
  try {
    loader.Next();
    FAIL() << "expected the producer's error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "episode 3 is corrupt");
  }
}

TEST(PrefetchLoaderTest, DestroyingEarlyStopsTheWorker) {
  std::atomic<int64_t> produced{0};
  {
    PrefetchLoader<int64_t> loader(
        [&](int64_t k) {
          ++produced;
          return k;
        },
        1000000, 2);
    EXPECT_EQ(*loader.Next(), 0);
  }
  EXPECT_LT(produced.load(), 10);
}

}  // namespace
}  // namespace baton
