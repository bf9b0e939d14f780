// The parquet reader against files whose counts and sizes lie: every one a named kData error
// (never an abort, a read past a buffer, a hang or a huge allocation), and the legal corner
// cases (a zero-row chunk, an empty v2 values section) read as what they are. Files come from
// tests/unit/parquet_writer.h, each breaking one field.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>

#include <gtest/gtest.h>

#include "parquet_writer.h"
#include "tests/common/temp_dir.h"
#include "trainer/parquet/parquet_file.h"

namespace baton::parquet {
namespace {

using testing::Build;
using testing::ChunkSpec;
using testing::FileSpec;
using testing::FloatFile;
using testing::ListFile;
using testing::PageSpec;
using testing::Plain;
using testing::RleRun;
using testing::V1Levels;

Result<ColumnData> Read(const std::string& bytes, const std::string& column = "x",
                        const ParquetLimits& limits = {}) {
  auto f = ParquetFile::FromBytes("t.parquet", bytes, limits);
  if (!f.ok()) return f.status();
  return f->ReadColumn(column);
}

// The error's message, or "" (and a test failure) when the read succeeded.
std::string Refusal(const Result<ColumnData>& r) {
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Code::kData) << r.status().ToString();
  EXPECT_NE(r.status().message().find("t.parquet"), std::string::npos) << r.status().message();
  return r.status().message();
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(ParquetBounds, WellFormedFileReads) {
  auto r = Read(Build(FloatFile({1.5f, -2, 3})));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->values, (std::vector<double>{1.5, -2, 3}));
  EXPECT_EQ(r->rows(), 3);
}

TEST(ParquetBounds, PagesEndAtTheChunk) {
  // Column x's chunk claims 6 values but its page holds 3; column y's page follows. Read to the
  // end of the file instead of the chunk, x would return y's values as its own.
  FileSpec f;
  f.columns = {{"x", 4}, {"y", 4}};
  PageSpec px, py;
  px.num_values = py.num_values = 3;
  px.body = Plain(std::vector<float>{1, 2, 3});
  py.body = Plain(std::vector<float>{7, 8, 9});
  ChunkSpec cx{{px}}, cy{{py}};
  cx.num_values = 6;
  cy.num_values = 6;
  f.groups = {{6, {cx, cy}}};
  const std::string why = Refusal(Read(Build(f)));
  EXPECT_HAS(why, "column 'x'");
  EXPECT_HAS(why, "pages hold 3 values");
}

TEST(ParquetBounds, ChunkBeyondTheDataSection) {
  FileSpec f = FloatFile({1, 2});
  f.groups[0].chunks[0].total_compressed = 1 << 20;
  EXPECT_HAS(Refusal(Read(Build(f))), "outside the file's data");
}

TEST(ParquetBounds, PageValueCountsAreCheckedBeforeUse) {
  for (int64_t n : {int64_t(-1), int64_t(1) << 40, int64_t(3)}) {
    FileSpec f = FloatFile({1, 2});
    f.groups[0].chunks[0].pages[0].num_values = n;
    f.groups[0].chunks[0].num_values = 2;
    EXPECT_HAS(Refusal(Read(Build(f))), "values, the chunk has 2 left");
  }
}

TEST(ParquetBounds, HugeUncompressedSizeIsNotAllocated) {
  // 2^62 bytes claimed by a 150-byte file: refused before any allocation.
  FileSpec f = FloatFile({1, 2});
  f.groups[0].chunks[0].codec = 1;  // SNAPPY
  f.groups[0].chunks[0].pages[0].uncompressed_size = int64_t(1) << 62;
  EXPECT_HAS(Refusal(Read(Build(f))), "above the reader's limit");
  // The limit is the caller's: 2 MiB claimed against a 1 MiB limit.
  f.groups[0].chunks[0].pages[0].uncompressed_size = 2 << 20;
  ParquetLimits small;
  small.max_page_bytes = 1 << 20;
  EXPECT_HAS(Refusal(Read(Build(f), "x", small)), "limit of 1048576");
}

TEST(ParquetBounds, ValuesClaimedBeyondTheColumnLimit) {
  // 2^31 values from a dictionary of one and an RLE run of 2^31 zero indices: about 20 bytes of
  // pages that would decode to tens of gigabytes.
  const int64_t n = int64_t(1) << 31;
  PageSpec dict, data;
  dict.type = 2;
  dict.num_values = 1;
  dict.body = Plain(std::vector<float>{4});
  data.num_values = n;
  data.encoding = 8;  // RLE_DICTIONARY
  data.body = std::string(1, '\0') + RleRun(0, uint64_t(n), 0);
  FileSpec f;
  f.columns = {{"x", 4}};
  f.groups = {{n, {{{dict, data}}}}};
  EXPECT_HAS(Refusal(Read(Build(f))), "above the reader's limit");
  // Under the limit the same layout reads.
  f.groups[0].num_rows = 5;
  f.groups[0].chunks[0].pages[1].num_values = 5;
  f.groups[0].chunks[0].pages[1].body = std::string(1, '\0') + RleRun(0, 5, 0);
  auto r = Read(Build(f));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->values, std::vector<double>(5, 4.0));
}

TEST(ParquetBounds, PlainCountThatWrapsIsRefused) {
  // (2^62 + 1) x 4 bytes wraps to 4 in 64 bits: a dictionary page claiming that many values.
  PageSpec dict;
  dict.type = 2;
  dict.num_values = (int64_t(1) << 62) + 1;
  dict.body = Plain(std::vector<float>{1, 2});
  FileSpec f = FloatFile({1});
  f.groups[0].chunks[0].pages.insert(f.groups[0].chunks[0].pages.begin(), dict);
  EXPECT_HAS(Refusal(Read(Build(f))), "a dictionary of 4611686018427387905 values");
}

TEST(ParquetBounds, V2LevelLengthsThatOverflowAreRefused) {
  for (auto [rep, def] : {std::pair<int64_t, int64_t>{int64_t(1) << 62, int64_t(1) << 62},
                          {INT64_MAX, 1},
                          {-4, 8},
                          {4, 100}}) {
    FileSpec f = ListFile({1, 2, 3, 4}, 2);
    PageSpec& p = f.groups[0].chunks[0].pages[0];
    p.type = 3;
    p.rep_len = rep;
    p.def_len = def;
    EXPECT_HAS(Refusal(Read(Build(f), "a")), "level lengths");
  }
}

TEST(ParquetBounds, FirstRepetitionLevelMustBeZero) {
  // Levels 1,1,0,1 claim the page starts inside a row: accepted, every row would shift.
  auto good = Read(Build(ListFile({1, 2, 3, 4}, 2)), "a");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->offsets, (std::vector<int64_t>{0, 2, 4}));
  const std::string why = Refusal(Read(Build(ListFile({1, 2, 3, 4}, 2, {1, 1, 0, 1})), "a"));
  EXPECT_HAS(why, "starts inside a row");
}

TEST(ParquetBounds, LevelsMustAgreeWithTheRowCount) {
  FileSpec f = ListFile({1, 2, 3, 4}, 2);
  f.groups[0].num_rows = 3;  // the levels hold 2 rows
  EXPECT_HAS(Refusal(Read(Build(f), "a")), "metadata says 4 values in 3 rows");
  FileSpec v2 = ListFile({1, 2, 3, 4}, 2);
  PageSpec& p = v2.groups[0].chunks[0].pages[0];
  // As a v2 page: the same levels without their length prefixes, and a row count that lies.
  p.type = 3;
  p.body =
      testing::BitPacked({0, 1, 0, 1}, 1) + RleRun(1, 4, 1) + Plain(std::vector<float>{1, 2, 3, 4});
  p.rep_len = int64_t(testing::BitPacked({0, 1, 0, 1}, 1).size());
  p.def_len = int64_t(RleRun(1, 4, 1).size());
  p.v2_compressed = false;
  p.num_rows = 2;
  auto ok = Read(Build(v2), "a");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->values, (std::vector<double>{1, 2, 3, 4}));
  p.num_rows = 3;
  EXPECT_HAS(Refusal(Read(Build(v2), "a")), "a data page v2 of 3 rows whose levels hold 2");
}

TEST(ParquetBounds, ZeroRowChunkReadsEmpty) {
  // A second row group of no rows whose chunk has no pages and points nowhere (offset 0).
  FileSpec f = FloatFile({1, 2});
  ChunkSpec empty;
  empty.num_values = 0;
  empty.data_page_offset = 0;
  f.groups.push_back({0, {empty}});
  auto r = Read(Build(f));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->values, (std::vector<double>{1, 2}));
  EXPECT_EQ(r->rows(), 2);
  // But a chunk of no values for rows that exist is a lie.
  f.groups[1].num_rows = 1;
  EXPECT_HAS(Refusal(Read(Build(f))), "a chunk of 0 values for 1 rows");
}

TEST(ParquetBounds, EmptyV2ValuesSectionIsNotSentToTheCodec) {
  // SNAPPY chunk: a v2 page of no values (no bytes at all), then an uncompressed v2 page.
  PageSpec empty, data;
  empty.type = data.type = 3;
  empty.num_values = 0;
  empty.num_rows = 0;
  data.num_values = 2;
  data.num_rows = 2;
  data.v2_compressed = false;
  data.body = Plain(std::vector<float>{5, 6});
  FileSpec f;
  f.columns = {{"x", 4}};
  ChunkSpec c{{empty, data}};
  c.codec = 1;
  f.groups = {{2, {c}}};
  auto r = Read(Build(f));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->values, (std::vector<double>{5, 6}));
}

TEST(ParquetBounds, PageCrcIsVerified) {
  FileSpec f = FloatFile({1, 2, 3});
  PageSpec& p = f.groups[0].chunks[0].pages[0];
  const uint32_t crc =
      uint32_t(crc32(0, reinterpret_cast<const Bytef*>(p.body.data()), uInt(p.body.size())));
  p.crc = int32_t(crc);  // the format stores it as an i32
  auto good = Read(Build(f));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->values, (std::vector<double>{1, 2, 3}));
  p.body[5] = char(p.body[5] ^ 0x01);  // one bit of a value flipped
  EXPECT_HAS(Refusal(Read(Build(f))), "page CRC mismatch");
}

TEST(ParquetBounds, EncryptedFilesAreNamedSo) {
  const std::string plain = Build(FloatFile({1}));
  std::string pare = plain;
  pare.replace(0, 4, "PARE");
  pare.replace(pare.size() - 4, 4, "PARE");
  auto a = ParquetFile::FromBytes("e.parquet", pare);
  ASSERT_FALSE(a.ok());
  EXPECT_HAS(a.status().message(), "encrypted parquet file (encrypted footer");
  FileSpec f = FloatFile({1});
  f.encrypted_footer_field = true;
  auto b = ParquetFile::FromBytes("e.parquet", Build(f));
  ASSERT_FALSE(b.ok());
  EXPECT_HAS(b.status().message(), "encrypted parquet file (plaintext footer");
  FileSpec g = FloatFile({1});
  g.groups[0].chunks[0].encrypted = true;
  EXPECT_HAS(Refusal(Read(Build(g))), "an encrypted column");
}

TEST(ParquetBounds, DictionaryIndicesMustAddressTheDictionary) {
  // A dictionary of 3 values and indices of bit width 0: every value would read as the first.
  PageSpec dict, data;
  dict.type = 2;
  dict.num_values = 3;
  dict.body = Plain(std::vector<float>{4, 5, 6});
  data.num_values = 4;
  data.encoding = 8;
  data.body = std::string(1, '\0') + RleRun(0, 4, 0);
  FileSpec f;
  f.columns = {{"x", 4}};
  f.groups = {{4, {{{dict, data}}}}};
  EXPECT_HAS(Refusal(Read(Build(f))), "bit width 0 cannot address a dictionary of 3 values");
  f.groups[0].chunks[0].pages[1].body = std::string(1, '\2') + testing::BitPacked({2, 0, 1, 2}, 2);
  auto r = Read(Build(f));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->values, (std::vector<double>{6, 4, 5, 6}));
}

TEST(ParquetBounds, ChunkTypeMustMatchTheSchema) {
  FileSpec f = FloatFile({1, 2});
  f.groups[0].chunks[0].type = 5;  // DOUBLE: 2 floats would read as 1 double
  EXPECT_HAS(Refusal(Read(Build(f))), "the chunk's type DOUBLE differs from the schema's FLOAT");
}

TEST(ParquetBounds, RowGroupsMustAddUpToTheFile) {
  FileSpec f = FloatFile({1, 2});
  f.num_rows = 1;
  EXPECT_HAS(Refusal(Read(Build(f))), "the row groups hold 2 rows, the footer says 1");
  f.num_rows = 3;
  EXPECT_HAS(Refusal(Read(Build(f))), "the row groups hold 2 rows, the footer says 3");
}

TEST(ParquetBounds, OnlyRegularFilesAreOpened) {
  test::TempDir dir;
  const std::string fifo = dir / "fifo.parquet";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero"), dir.path()}) {
    auto f = ParquetFile::Open(path);  // a FIFO would block here, /dev/zero never end
    ASSERT_FALSE(f.ok()) << path;
    EXPECT_EQ(f.status().code(), Code::kData);
    EXPECT_HAS(f.status().message(), "not a regular file");
    EXPECT_HAS(f.status().message(), path);
  }
  // A sparse file of 5 GiB (no blocks on disk) is refused before a byte is allocated.
  const std::string huge = dir / "huge.parquet";
  { std::ofstream touch(huge); }
  ASSERT_EQ(::truncate(huge.c_str(), off_t(5) << 30), 0);
  auto h = ParquetFile::Open(huge);
  ASSERT_FALSE(h.ok());
  EXPECT_HAS(h.status().message(), "more than the reader's 4 GiB");
  const std::string real = dir / "x.parquet";
  std::ofstream(real, std::ios::binary) << Build(FloatFile({3}));
  auto f = ParquetFile::Open(real);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->ReadColumn("x")->values, std::vector<double>{3});
}

}  // namespace
}  // namespace baton::parquet
