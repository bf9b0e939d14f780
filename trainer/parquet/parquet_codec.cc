#include "trainer/parquet/parquet_codec.h"

#include <snappy-c.h>
#include <zstd.h>

namespace baton::parquet {

std::string CodecName(int64_t codec) {
  static const char* kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                 "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  if (codec >= 0 && codec < 8) return kNames[codec];
  return "codec " + std::to_string(codec);
}

Status Decompress(int64_t codec, const uint8_t* in, size_t n, size_t expected, std::string* out) {
  out->assign(expected, '\0');
  switch (codec) {
    case 0:
      if (n != expected) {
        return Status::Data("uncompressed page holds " + std::to_string(n) +
                            " bytes, its header says " + std::to_string(expected));
      }
      out->assign(reinterpret_cast<const char*>(in), n);
      return Status::Ok();
    case 1: {
      size_t got = expected;
      if (snappy_uncompress(reinterpret_cast<const char*>(in), n, out->data(), &got) != SNAPPY_OK ||
          got != expected) {
        return Status::Data("corrupt SNAPPY page (or its size differs from the header's " +
                            std::to_string(expected) + " bytes)");
      }
      return Status::Ok();
    }
    case 6: {
      const size_t got = ZSTD_decompress(out->data(), expected, in, n);
      if (ZSTD_isError(got) || got != expected) {
        return Status::Data(
            std::string("corrupt ZSTD page: ") +
            (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size differs from header"));
      }
      return Status::Ok();
    }
    default:
      return Status::Data("compression " + CodecName(codec) +
                          " is not supported (this reader handles UNCOMPRESSED, SNAPPY and ZSTD)");
  }
}

}  // namespace baton::parquet
