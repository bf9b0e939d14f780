// The Thrift compact decoder and the schema walk against footers built to exhaust them:
// containers whose counts their bytes do not hold, bools that take no bytes, nesting past the
// caps, and schemas deep or wide enough to turn a quadratic walk into gigabytes.
#include <sys/resource.h>

#include <chrono>

#include <gtest/gtest.h>

#include "parquet_writer.h"
#include "trainer/parquet/parquet_file.h"
#include "trainer/parquet/parquet_schema.h"
#include "trainer/parquet/thrift_compact.h"

namespace baton::parquet {
namespace {

using testing::Thrift;

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

Result<ThriftValue> Decode(const std::string& s, size_t* pos) {
  return ReadThriftStruct(reinterpret_cast<const uint8_t*>(s.data()), s.size(), pos);
}

int64_t PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

TEST(ThriftCompact, MapOfBoolsTakesOneByteAnEntry) {
  // Field 1: a map of 3 bool -> bool entries (6 bytes), then field 2 = 7.
  std::string s;
  s += char(0x1b);  // field 1, map
  s += char(3);     // 3 entries
  s += char(0x11);  // bool keys, bool values
  s += std::string("\x01\x02\x01\x01\x02\x02", 6);
  s += char(0x16);  // field 2, i64
  s += char(14);    // zigzag 7
  s += char(0);
  size_t pos = 0;
  auto v = Decode(s, &pos);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(pos, s.size());
  EXPECT_EQ(v->Int(2), 7);
}

TEST(ThriftCompact, MapCountIsBoundedByItsBytes) {
  // A map of 2^60 bool entries in 13 bytes: each entry would take no bytes, the loop no end.
  Thrift t;
  std::string s;
  s += char(0x1b);
  t.Uv(uint64_t(1) << 60);
  s += t.out;
  s += char(0x11);
  s += char(0);
  size_t pos = 0;
  const auto start = std::chrono::steady_clock::now();
  auto v = Decode(s, &pos);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Code::kData);
  EXPECT_HAS(v.status().message(), "map of 1152921504606846976 entries");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(ThriftCompact, ListCountIsBoundedByItsBytes) {
  // A list claiming 1000 doubles in 80 bytes (each takes 8).
  Thrift t;
  t.List(1, 7, 1000);
  t.out += std::string(80, '\0');
  t.out += char(0);
  size_t pos = 0;
  auto v = Decode(t.out, &pos);
  ASSERT_FALSE(v.ok());
  EXPECT_HAS(v.status().message(), "list of 1000 elements");
}

TEST(ThriftCompact, NestedListClaimsDoNotReserveMemory) {
  // 32 nested list headers each claiming as many elements as the 1 MiB footer has bytes: a
  // decoder that reserves per claimed element allocates about 3 GB before it fails.
  Thrift t;
  t.List(1, 9, 1 << 20);
  for (int k = 0; k < 31; ++k) t.ListHead(9, 1 << 20);
  t.out.resize(1 << 20, '\0');
  const int64_t before = PeakRssMiB();
  size_t pos = 0;
  auto v = Decode(t.out, &pos);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Code::kData);
  EXPECT_LT(PeakRssMiB() - before, 256);
}

TEST(ThriftCompact, NestingIsCapped) {
  std::string s;
  for (int k = 0; k < 40; ++k) s += char(0x1c);  // field 1, struct, 40 deep
  s += std::string(41, '\0');
  size_t pos = 0;
  auto v = Decode(s, &pos);
  ASSERT_FALSE(v.ok());
  EXPECT_HAS(v.status().message(), "nesting deeper than 32");
}

// A footer whose schema is a chain of `depth` nested groups ending in one FLOAT leaf.
std::string DeepSchemaFile(int depth) {
  Thrift m;
  m.I(1, 1);
  m.List(2, 12, uint64_t(depth) + 2);
  m.BeginElem();
  m.Bin(4, "schema");
  m.I(5, 1);
  m.End();
  for (int k = 0; k < depth; ++k) {
    m.BeginElem();
    m.I(3, 0);
    m.Bin(4, "g");
    m.I(5, 1);
    m.End();
  }
  m.BeginElem();
  m.I(1, 4);
  m.I(3, 0);
  m.Bin(4, "leaf");
  m.End();
  m.I(3, 0);
  m.out += char(0);
  std::string out = "PAR1" + m.out;
  const uint32_t n = uint32_t(m.out.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  return out + "PAR1";
}

TEST(ParquetSchema, DepthIsCapped) {
  auto ok = ParquetFile::FromBytes("d.parquet", DeepSchemaFile(kMaxSchemaDepth - 1));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->columns().size(), 1u);
  EXPECT_EQ(ok->columns()[0].path.size(), size_t(2 * (kMaxSchemaDepth - 1) + 4));
  EXPECT_EQ(ok->columns()[0].name, "g");
  auto deep = ParquetFile::FromBytes("d.parquet", DeepSchemaFile(kMaxSchemaDepth));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), Code::kData);
  EXPECT_HAS(deep.status().message(), "d.parquet: schema nested deeper than 100 levels");
}

TEST(ParquetSchema, FortyThousandNestedGroupsAreRefusedCheaply) {
  // A walk that copies every open group's path spends 1.6 GB on this 320 KB footer.
  const std::string file = DeepSchemaFile(40000);
  const int64_t before = PeakRssMiB();
  auto f = ParquetFile::FromBytes("d.parquet", file);
  ASSERT_FALSE(f.ok());
  EXPECT_HAS(f.status().message(), "nested deeper than 100");
  EXPECT_LT(PeakRssMiB() - before, 200);
}

TEST(ParquetSchema, ChildCountsAreBoundedByTheElements) {
  Thrift m;  // a struct whose field 1 is the schema list
  m.List(1, 12, 2);
  m.BeginElem();
  m.Bin(4, "schema");
  m.I(5, 1);
  m.End();
  m.BeginElem();
  m.Bin(4, "g");
  m.I(5, int64_t(1) << 40);  // a group claiming 2^40 children, none follow
  m.End();
  m.out += char(0);
  size_t pos = 0;
  auto v = Decode(m.out, &pos);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  std::vector<ColumnDesc> cols;
  const Status st = ReadSchema(*v->Field(1), &cols);
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "claims 1099511627776 children, 0 elements follow it");
}

}  // namespace
}  // namespace baton::parquet
