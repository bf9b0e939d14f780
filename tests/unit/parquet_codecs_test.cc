// The codecs and encodings other writers use, on pages this test compresses itself with the
// same libraries' encoders: GZIP (zlib, one member and two), BROTLI, LZ4_RAW, LZ4 in Hadoop's
// framing, compressed and uncompressed data page v2, and a dictionary that spills to PLAIN.
#include <brotli/encode.h>
#include <lz4.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include "parquet_writer.h"
#include "trainer/parquet/parquet_codec.h"
#include "trainer/parquet/parquet_file.h"

namespace baton::parquet {
namespace {

using testing::Build;
using testing::FileSpec;
using testing::PageSpec;
using testing::Plain;

std::string Gzip(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);  // gzip wrapper
  std::string out(deflateBound(&z, uLong(in.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Brotli(const std::string& in) {
  size_t n = BrotliEncoderMaxCompressedSize(in.size());
  std::string out(n, '\0');
  BrotliEncoderCompress(5, 22, BROTLI_MODE_GENERIC, in.size(),
                        reinterpret_cast<const uint8_t*>(in.data()), &n,
                        reinterpret_cast<uint8_t*>(out.data()));
  out.resize(n);
  return out;
}

std::string Lz4Block(const std::string& in) {
  std::string out(size_t(LZ4_compressBound(int(in.size()))), '\0');
  out.resize(size_t(LZ4_compress_default(in.data(), out.data(), int(in.size()), int(out.size()))));
  return out;
}

std::string Be32(uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

// Hadoop's framing, in blocks of `block` input bytes.
std::string Lz4Hadoop(const std::string& in, size_t block) {
  std::string out;
  for (size_t at = 0; at < in.size(); at += block) {
    const std::string part = in.substr(at, block);
    const std::string c = Lz4Block(part);
    out += Be32(uint32_t(part.size())) + Be32(uint32_t(c.size())) + c;
  }
  return out;
}

std::vector<float> Values(int n) {
  std::vector<float> v;
  for (int k = 0; k < n; ++k) v.push_back(float(k % 37) * 0.25f - float(k) / 3.0f);
  return v;
}

// One column "x" whose single v1 page is `compress(plain bytes)` under `codec`.
std::vector<double> ReadCompressed(int codec, const std::string& body, const std::string& plain,
                                   int64_t n) {
  PageSpec p;
  p.num_values = n;
  p.body = body;
  p.uncompressed_size = int64_t(plain.size());
  FileSpec f;
  f.columns = {{"x", 4}};
  testing::ChunkSpec c{{p}};
  c.codec = codec;
  f.groups = {{n, {c}}};
  auto file = ParquetFile::FromBytes("c.parquet", Build(f));
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return {};
  auto r = file->ReadColumn("x");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->values : std::vector<double>{};
}

TEST(ParquetCodecs, EachCodecReadsTheValuesWritten) {
  const auto v = Values(3000);
  const std::vector<double> want(v.begin(), v.end());
  const std::string plain = Plain(v);
  EXPECT_EQ(ReadCompressed(2, Gzip(plain), plain, 3000), want);
  EXPECT_EQ(ReadCompressed(2, Gzip(plain.substr(0, 5000)) + Gzip(plain.substr(5000)), plain, 3000),
            want);  // two gzip members
  EXPECT_EQ(ReadCompressed(4, Brotli(plain), plain, 3000), want);
  EXPECT_EQ(ReadCompressed(7, Lz4Block(plain), plain, 3000), want);
  EXPECT_EQ(ReadCompressed(5, Lz4Hadoop(plain, 4096), plain, 3000), want);  // 3 blocks
  EXPECT_EQ(ReadCompressed(5, Lz4Block(plain), plain, 3000), want);         // a bare block
}

TEST(ParquetCodecs, CorruptStreamsAreNamed) {
  const std::string plain = Plain(Values(100));
  std::string out;
  for (int codec : {2, 4, 5, 7}) {
    std::string bad = codec == 2 ? Gzip(plain) : codec == 4 ? Brotli(plain) : Lz4Block(plain);
    bad.resize(bad.size() / 2);
    const Status st = Decompress(codec, reinterpret_cast<const uint8_t*>(bad.data()), bad.size(),
                                 plain.size(), &out);
    ASSERT_FALSE(st.ok()) << codec;
    EXPECT_EQ(st.code(), Code::kData);
    EXPECT_NE(st.message().find("corrupt " + CodecName(codec)), std::string::npos) << st.message();
  }
  // A stream that holds more than the header says.
  const std::string big = Gzip(plain);
  const Status st = Decompress(2, reinterpret_cast<const uint8_t*>(big.data()), big.size(),
                               plain.size() - 4, &out);
  EXPECT_FALSE(st.ok());
  const Status lzo = Decompress(3, nullptr, 0, 0, &out);
  EXPECT_NE(lzo.message().find("compression LZO is not supported"), std::string::npos);
}

TEST(ParquetCodecs, DataPageV2CompressedAndNot) {
  const auto v = Values(500);
  const std::string plain = Plain(v);
  for (bool compressed : {true, false}) {
    PageSpec p;
    p.type = 3;
    p.num_values = 500;
    p.num_rows = 500;
    p.v2_compressed = compressed;
    p.body = compressed ? Gzip(plain) : plain;
    p.uncompressed_size = int64_t(plain.size());
    FileSpec f;
    f.columns = {{"x", 4}};
    testing::ChunkSpec c{{p}};
    c.codec = 2;
    f.groups = {{500, {c}}};
    auto file = ParquetFile::FromBytes("v2.parquet", Build(f));
    ASSERT_TRUE(file.ok());
    auto r = file->ReadColumn("x");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->values, std::vector<double>(v.begin(), v.end()));
  }
}

TEST(ParquetCodecs, DictionaryThatSpillsToPlain) {
  // pyarrow on a long episode: a dictionary page, dictionary-encoded pages until the dictionary
  // is full, then PLAIN pages in the same chunk.
  PageSpec dict, indices, plain;
  dict.type = 2;
  dict.num_values = 3;
  dict.body = Plain(std::vector<float>{0.5f, 1.5f, 2.5f});
  indices.num_values = 4;
  indices.encoding = 8;
  indices.body = std::string(1, '\2') + testing::BitPacked({2, 1, 0, 2}, 2);
  plain.num_values = 3;
  plain.body = Plain(std::vector<float>{7, 8, 9});
  FileSpec f;
  f.columns = {{"x", 4}};
  f.groups = {{7, {{{dict, indices, plain}}}}};
  auto file = ParquetFile::FromBytes("s.parquet", Build(f));
  ASSERT_TRUE(file.ok());
  auto r = file->ReadColumn("x");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->values, (std::vector<double>{2.5, 1.5, 0.5, 2.5, 7, 8, 9}));
}

}  // namespace
}  // namespace baton::parquet
