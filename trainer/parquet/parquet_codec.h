// Page decompression for the parquet reader, each codec through Debian's library: SNAPPY
// (libsnappy), GZIP (zlib), BROTLI (libbrotli), ZSTD (libzstd), LZ4_RAW and LZ4 (liblz4; LZ4 is
// Hadoop's framing, with the LZ4 frame format and a bare block as the fallbacks other writers
// used). LZO and unknown codecs are named in the error, not guessed at.
#pragma once

#include <cstdint>
#include <string>

#include "schema/status.h"

namespace baton::parquet {

// The name of a parquet CompressionCodec value ("SNAPPY", "GZIP", ...).
std::string CodecName(int64_t codec);

// Decompresses `n` bytes at `in` into exactly `expected` bytes (which the caller has bounded).
// kData on a bad stream, a size mismatch or an unsupported codec; the caller prefixes the file
// and column.
Status Decompress(int64_t codec, const uint8_t* in, size_t n, size_t expected, std::string* out);

}  // namespace baton::parquet
