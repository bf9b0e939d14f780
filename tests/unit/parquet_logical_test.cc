// Logical annotations on numeric leaves: applied (DECIMAL's scale, unsigned integers) or refused
// by name (timestamps, dates, unknown types), never returned as the raw numbers.
#include <gtest/gtest.h>

#include "parquet_writer.h"
#include "trainer/parquet/parquet_file.h"

namespace baton::parquet {
namespace {

using testing::Build;
using testing::FileSpec;
using testing::PageSpec;
using testing::Plain;
using testing::Thrift;

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

template <class T>
FileSpec IntFile(int type, const std::vector<T>& v) {
  PageSpec p;
  p.num_values = int64_t(v.size());
  p.body = Plain(v);
  FileSpec f;
  f.columns = {{"x", type}};
  f.groups = {{int64_t(v.size()), {{{p}}}}};
  return f;
}

Result<ColumnData> Read(const FileSpec& f) {
  auto file = ParquetFile::FromBytes("l.parquet", Build(f));
  if (!file.ok()) return file.status();
  return file->ReadColumn("x");
}

std::string Refusal(const FileSpec& f) {
  auto r = Read(f);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Code::kData);
  EXPECT_HAS(r.status().message(), "l.parquet: column 'x'");
  return r.status().message();
}

// A LogicalType union with one struct member `id` holding the given encoded fields.
std::string Union(int16_t id, const std::string& fields) {
  Thrift t;
  t.Struct(id, fields + std::string(1, '\0'));
  return t.out + std::string(1, '\0');
}

TEST(ParquetLogical, DecimalIsScaled) {
  // INT32 DECIMAL(9, 2): 100 -> 1.00, 2550 -> 25.50, -7 -> -0.07 (the nearest double).
  FileSpec f = IntFile<int32_t>(1, {100, 2550, -7});
  f.columns[0].converted = 5;
  f.columns[0].scale = 2;
  f.columns[0].precision = 9;
  auto r = Read(f);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->desc.logical, "DECIMAL(9,2)");
  EXPECT_EQ(r->values, (std::vector<double>{1.0, 25.5, -0.07}));
  // The same through the LogicalType union (scale field 1, precision field 2), on INT64.
  FileSpec g = IntFile<int64_t>(2, {123456789});
  Thrift d;
  d.I(1, 4);
  d.I(2, 18);
  g.columns[0].logical = Union(5, d.out);
  auto s = Read(g);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->values, std::vector<double>{12345.6789});
}

TEST(ParquetLogical, DecimalOutOfRangeIsRefused) {
  FileSpec f = IntFile<int32_t>(1, {1});
  f.columns[0].converted = 5;
  f.columns[0].scale = 30;
  f.columns[0].precision = 40;
  EXPECT_HAS(Refusal(f), "DECIMAL(40,30) has a scale out of range");
}

TEST(ParquetLogical, UnsignedIntegersReadUnsigned) {
  FileSpec f = IntFile<int32_t>(1, {-1, 7});  // 0xffffffff
  f.columns[0].converted = 13;                // UINT_32
  auto r = Read(f);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->values, (std::vector<double>{4294967295.0, 7}));
  // INTEGER(64, unsigned) through the union: 2^63 is beyond a double's exact integers.
  FileSpec g = IntFile<int64_t>(2, {int64_t(uint64_t(1) << 63)});
  Thrift i;
  i.I(1, 64);
  i.Bool(2, false);
  g.columns[0].logical = Union(10, i.out);
  EXPECT_HAS(Refusal(g), "UINT64 value 9223372036854775808 beyond 2^53");
  // A signed annotation changes nothing.
  FileSpec h = IntFile<int32_t>(1, {-1});
  h.columns[0].converted = 17;  // INT_32
  auto s = Read(h);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->values, std::vector<double>{-1});
}

TEST(ParquetLogical, TimestampsAndDatesAreRefusedByName) {
  FileSpec f = IntFile<int64_t>(2, {1700000000000000});
  f.columns[0].converted = 10;
  EXPECT_HAS(Refusal(f), "logical type TIMESTAMP_MICROS is not supported");
  Thrift ts;
  ts.Bool(1, true);
  f.columns[0].converted.reset();
  f.columns[0].logical = Union(8, ts.out);
  EXPECT_HAS(Refusal(f), "logical type TIMESTAMP is not supported");
  FileSpec d = IntFile<int32_t>(1, {19000});
  d.columns[0].converted = 6;
  EXPECT_HAS(Refusal(d), "logical type DATE is not supported");
}

TEST(ParquetLogical, UnknownLogicalTypeIsRefused) {
  FileSpec f = IntFile<int32_t>(1, {1});
  f.columns[0].logical = Union(42, "");
  EXPECT_HAS(Refusal(f), "unknown logical type, union field 42");
}

}  // namespace
}  // namespace baton::parquet
