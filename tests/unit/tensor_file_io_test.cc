// The checkpoint tensor files' hashed write and read: the read returns the same digest as hashing
// the file, puts every tensor's bytes where the caller says, and does so on one thread or several;
// a file that shrank under the reader is an error naming it on any thread count.
#include "trainer/ckpt/tensor_file_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "schema/checkpoint_manifest.h"
#include "tests/common/temp_dir.h"

namespace baton {
namespace {

struct Fixture {
  // Sizes that cross the reader's 1 MiB chunks and the writer's 4 MiB ones, and one tiny tensor.
  std::map<std::string, std::vector<float>> tensors = {
      {"a", std::vector<float>(3 * (1 << 18) + 5)},
      {"b", std::vector<float>(7)},
      {"c", std::vector<float>((5 << 20) / 4 + 3)},
      {"d", std::vector<float>(1 << 18)},
  };
  Fixture() {
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& [name, v] : tensors) {
      for (float& x : v) x = u(gen);
    }
  }
  std::vector<StTensorRef> Refs() const {
    std::vector<StTensorRef> refs;
    for (const auto& [name, v] : tensors) {
      refs.push_back({name, StDType::kF32, {int64_t(v.size())}, v.data()});
    }
    return refs;
  }
};

TEST(TensorFileIo, ReadOnAnyThreadCountGivesTheFilesHashAndBytes) {
  test::TempDir dir;
  Fixture fx;
  const std::string path = dir / "t.safetensors";
  auto written = WriteHashedSafetensors(path, fx.Refs(), {{"format", "pt"}});
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  uint64_t bytes = 0;
  auto hashed = HashFile(path, &bytes);
  ASSERT_TRUE(hashed.ok());
  EXPECT_EQ(written.value().xxh3, hashed.value());
  EXPECT_EQ(written.value().bytes, bytes);
  for (int threads : {1, 2, 3, 8}) {
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok());
    // Every tensor but "d" into its own buffer; "d" is only hashed.
    std::map<std::string, std::vector<float>> got;
    auto read = ReadHashedSafetensors(
        *file.value(),
        [&](const StTensorInfo& t) -> void* {
          if (t.name == "d") return nullptr;
          got[t.name].assign(size_t(t.numel()), 0.f);
          return got[t.name].data();
        },
        threads);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read.value().xxh3, hashed.value()) << threads << " threads";
    EXPECT_EQ(read.value().bytes, bytes) << threads << " threads";
    ASSERT_EQ(got.size(), 3u);
    for (const auto& [name, v] : got) {
      EXPECT_EQ(std::memcmp(v.data(), fx.tensors.at(name).data(), v.size() * 4), 0)
          << name << ", " << threads << " threads";
    }
  }
}

TEST(TensorFileIo, AFileThatShrankIsAnErrorNamingItOnAnyThreadCount) {
  test::TempDir dir;
  Fixture fx;
  const std::string path = dir / "t.safetensors";
  ASSERT_TRUE(WriteHashedSafetensors(path, fx.Refs()).ok());
  for (int threads : {1, 3}) {
    auto file = SafetensorsFile::Open(path);  // sized before the truncation
    ASSERT_TRUE(file.ok());
    ASSERT_EQ(::truncate(path.c_str(), 2 << 20), 0);
    std::vector<std::vector<float>> keep;
    auto read = ReadHashedSafetensors(
        *file.value(),
        [&](const StTensorInfo& t) -> void* {
          keep.emplace_back(size_t(t.numel()));
          return keep.back().data();
        },
        threads);
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.status().ToString().find(path), std::string::npos);
    EXPECT_NE(read.status().ToString().find("shorter than it was"), std::string::npos)
        << read.status().ToString();
    ASSERT_TRUE(WriteHashedSafetensors(path, fx.Refs()).ok());
  }
}

}  // namespace
}  // namespace baton
