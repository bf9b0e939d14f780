// The parquet reader against a real LeRobot v2.1 file (pyarrow, snappy, dictionary pages, LIST
// columns) and against hand-made level buffers and broken files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/common/temp_dir.h"
#include "trainer/parquet/parquet_file.h"
#include "trainer/parquet/rle_hybrid.h"

namespace baton::parquet {
namespace {

const std::string kEpisode0 = std::string(BATON_SOURCE_DIR) +
                              "/tests/data/lerobot_g1_v21/data/chunk-000/episode_000000.parquet";

TEST(RleHybrid, DecodesRunsAndBitPackedGroups) {
  // RLE run of 3 x value 2 (header 3<<1, one value byte), then one bit-packed group of 8
  // one-bit values 1,0,1,1,0,0,0,1 (header 1<<1|1, byte 0b10001101).
  const uint8_t buf[] = {6, 2, 3, 0x8d};
  std::vector<uint32_t> out;
  ASSERT_TRUE(DecodeRleHybrid(buf, 2, 2, 3, &out).ok());
  EXPECT_EQ(out, (std::vector<uint32_t>{2, 2, 2}));
  ASSERT_TRUE(DecodeRleHybrid(buf + 2, 2, 1, 8, &out).ok());
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 0, 1, 1, 0, 0, 0, 1}));
  // Asking for more values than the runs hold is an error, not a read past the buffer.
  EXPECT_EQ(DecodeRleHybrid(buf, 2, 2, 4, &out).code(), Code::kData);
  EXPECT_EQ(BitWidth(0), 0);
  EXPECT_EQ(BitWidth(1), 1);
  EXPECT_EQ(BitWidth(3), 2);
  EXPECT_EQ(BitWidth(4), 3);
}

TEST(ParquetFile, ReadsLeRobotEpisode) {
  auto f = ParquetFile::Open(kEpisode0);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->num_rows(), 479);
  std::vector<std::string> names;
  for (const auto& c : f->columns()) names.push_back(c.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"observation.state", "action", "timestamp", "frame_index",
                                      "episode_index", "index", "task_index"}));
  auto action = f->ReadColumn("action");
  ASSERT_TRUE(action.ok()) << action.status().ToString();
  EXPECT_EQ(action->desc.max_rep, 1);
  EXPECT_EQ(action->rows(), 479);
  EXPECT_EQ(action->Width(), 26);
  auto frame = f->ReadColumn("frame_index");
  auto ts = f->ReadColumn("timestamp");
  auto index = f->ReadColumn("index");
  ASSERT_TRUE(frame.ok() && ts.ok() && index.ok());
  for (int64_t r = 0; r < 479; ++r) {
    EXPECT_EQ(frame->values[size_t(r)], double(r));
    EXPECT_EQ(index->values[size_t(r)], double(r));  // episode 0 starts the global index
    EXPECT_NEAR(ts->values[size_t(r)], double(r) / 30.0, 1e-5);  // fps 30, float32
  }
  EXPECT_EQ(f->ReadColumn("nope").status().code(), Code::kData);
}

TEST(ParquetFile, BrokenFilesNameTheFile) {
  test::TempDir dir;
  std::ifstream in(kEpisode0, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string truncated = dir.path() + "/truncated.parquet";
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto t = ParquetFile::Open(truncated);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kData);
  EXPECT_NE(t.status().message().find(truncated), std::string::npos);

  // Flip bytes of the first column's first page header: its sizes or fields go wrong.
  std::string corrupt = bytes;
  for (size_t k = 4; k < 24; ++k) corrupt[k] = char(corrupt[k] ^ 0x5a);
  const std::string bad = dir.path() + "/corrupt.parquet";
  std::ofstream(bad, std::ios::binary) << corrupt;
  auto c = ParquetFile::Open(bad);
  ASSERT_TRUE(c.ok());
  auto col = c->ReadColumn("observation.state");
  ASSERT_FALSE(col.ok());
  EXPECT_EQ(col.status().code(), Code::kData);
  EXPECT_NE(col.status().message().find(bad), std::string::npos);
}

}  // namespace
}  // namespace baton::parquet
