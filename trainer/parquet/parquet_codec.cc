#include "trainer/parquet/parquet_codec.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <climits>

namespace baton::parquet {
namespace {

enum Codec { kUncompressed, kSnappy, kGzip, kLzo, kBrotli, kLz4, kZstd, kLz4Raw };

Status SizeDiffers(const char* codec, size_t got, size_t expected) {
  return Status::Data(std::string("corrupt ") + codec + " page: it holds " + std::to_string(got) +
                      " bytes, its header says " + std::to_string(expected));
}

// zlib or gzip (auto-detected); concatenated gzip members are read one after the other.
Status Gunzip(const uint8_t* in, size_t n, size_t expected, std::string* out) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Status::Data("GZIP: zlib would not start");
  auto* dst = reinterpret_cast<Bytef*>(out->data());
  z.next_in = const_cast<Bytef*>(in);
  z.next_out = dst;
  Status st = Status::Ok();
  while (true) {
    // zlib counts in uInt: feed at most UINT_MAX at a time.
    z.avail_in = uInt(std::min<size_t>(n - size_t(z.next_in - in), UINT_MAX));
    z.avail_out = uInt(std::min<size_t>(expected - size_t(z.next_out - dst), UINT_MAX));
    const int rc = inflate(&z, Z_NO_FLUSH);
    const size_t done = size_t(z.next_out - dst), left = n - size_t(z.next_in - in);
    if (rc == Z_STREAM_END) {
      if (left == 0 || done == expected) break;
      if (inflateReset(&z) != Z_OK) {
        st = Status::Data("corrupt GZIP page");
        break;
      }
      continue;
    }
    if (rc == Z_OK) continue;  // progress was made
    if (rc == Z_BUF_ERROR) {   // no progress: out of input, or more output than the header said
      st = left == 0 ? Status::Data("corrupt GZIP page: truncated stream")
                     : Status::Data("corrupt GZIP page: it holds more than its header's " +
                                    std::to_string(expected) + " bytes");
    } else {
      st = Status::Data(std::string("corrupt GZIP page: ") + (z.msg ? z.msg : "bad stream"));
    }
    break;
  }
  const size_t done = size_t(z.next_out - dst);
  inflateEnd(&z);
  if (st.ok() && done != expected) return SizeDiffers("GZIP", done, expected);
  return st;
}

bool Lz4Block(const uint8_t* in, size_t n, char* out, size_t expected) {
  if (n > size_t(INT_MAX) || expected > size_t(INT_MAX)) return false;
  const int got =
      LZ4_decompress_safe(reinterpret_cast<const char*>(in), out, int(n), int(expected));
  return got >= 0 && size_t(got) == expected;
}

uint32_t LoadBe32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// Hadoop's framing: blocks of [u32 BE decompressed size][u32 BE compressed size][LZ4 block].
bool Lz4Hadoop(const uint8_t* in, size_t n, char* out, size_t expected) {
  size_t pos = 0, done = 0;
  while (pos < n) {
    if (n - pos < 8) return false;
    const size_t dsize = LoadBe32(in + pos), csize = LoadBe32(in + pos + 4);
    pos += 8;
    if (csize > n - pos || dsize > expected - done) return false;
    if (!Lz4Block(in + pos, csize, out + done, dsize)) return false;
    pos += csize;
    done += dsize;
  }
  return done == expected;
}

bool Lz4Frame(const uint8_t* in, size_t n, char* out, size_t expected) {
  LZ4F_dctx* ctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) return false;
  size_t pos = 0, done = 0;
  bool ok = false;
  while (true) {
    size_t dst = expected - done, src = n - pos;
    const size_t rc = LZ4F_decompress(ctx, out + done, &dst, in + pos, &src, nullptr);
    if (LZ4F_isError(rc)) break;
    pos += src;
    done += dst;
    if (rc == 0) {  // the frame ended
      ok = pos == n && done == expected;
      break;
    }
    if (src == 0 && dst == 0) break;  // no progress: truncated, or more output than expected
  }
  LZ4F_freeDecompressionContext(ctx);
  return ok;
}

}  // namespace

std::string CodecName(int64_t codec) {
  static const char* kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                 "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  if (codec >= 0 && codec < 8) return kNames[codec];
  return "codec " + std::to_string(codec);
}

Status Decompress(int64_t codec, const uint8_t* in, size_t n, size_t expected, std::string* out) {
  switch (codec) {
    case kUncompressed:
      if (n != expected) {
        return Status::Data("uncompressed page holds " + std::to_string(n) +
                            " bytes, its header says " + std::to_string(expected));
      }
      out->assign(reinterpret_cast<const char*>(in), n);
      return Status::Ok();
    case kSnappy: {
      out->assign(expected, '\0');
      size_t got = expected;
      if (snappy_uncompress(reinterpret_cast<const char*>(in), n, out->data(), &got) != SNAPPY_OK ||
          got != expected) {
        return Status::Data("corrupt SNAPPY page (or its size differs from the header's " +
                            std::to_string(expected) + " bytes)");
      }
      return Status::Ok();
    }
    case kGzip:
      out->assign(expected, '\0');
      return Gunzip(in, n, expected, out);
    case kBrotli: {
      out->assign(expected, '\0');
      size_t got = expected;
      if (BrotliDecoderDecompress(n, in, &got, reinterpret_cast<uint8_t*>(out->data())) !=
              BROTLI_DECODER_RESULT_SUCCESS ||
          got != expected) {
        return Status::Data("corrupt BROTLI page (or its size differs from the header's " +
                            std::to_string(expected) + " bytes)");
      }
      return Status::Ok();
    }
    case kZstd: {
      out->assign(expected, '\0');
      const size_t got = ZSTD_decompress(out->data(), expected, in, n);
      if (ZSTD_isError(got) || got != expected) {
        return Status::Data(
            std::string("corrupt ZSTD page: ") +
            (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size differs from header"));
      }
      return Status::Ok();
    }
    case kLz4Raw:
      out->assign(expected, '\0');
      if (!Lz4Block(in, n, out->data(), expected)) {
        return Status::Data("corrupt LZ4_RAW page (or its size differs from the header's " +
                            std::to_string(expected) + " bytes)");
      }
      return Status::Ok();
    case kLz4: {
      out->assign(expected, '\0');
      // Hadoop's framing is what parquet-mr and Arrow write; older Arrow wrote the LZ4 frame
      // format and some writers a bare block under the same codec id.
      static constexpr uint8_t kFrameMagic[] = {0x04, 0x22, 0x4d, 0x18};
      const bool frame = n >= 4 && std::equal(kFrameMagic, kFrameMagic + 4, in);
      if (Lz4Hadoop(in, n, out->data(), expected) ||
          (frame && Lz4Frame(in, n, out->data(), expected)) ||
          (!frame && Lz4Block(in, n, out->data(), expected))) {
        return Status::Ok();
      }
      return Status::Data(
          "corrupt LZ4 page (neither Hadoop-framed, an LZ4 frame nor a block of "
          "the header's " +
          std::to_string(expected) + " bytes)");
    }
    default:
      return Status::Data(
          "compression " + CodecName(codec) +
          " is not supported (this reader handles UNCOMPRESSED, SNAPPY, GZIP, BROTLI, ZSTD, "
          "LZ4 and LZ4_RAW)");
  }
}

}  // namespace baton::parquet
