// The parquet.thrift vocabulary the file reader uses (parquet_file.cc: the footer and the row
// groups; column_chunk_reader.cc: one column chunk's pages): field ids, page types, encodings,
// and the chunk byte-range check both halves make. Internal to trainer/parquet/. Pure;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "trainer/parquet/thrift_compact.h"

namespace baton::parquet::format {

// Field ids of the parquet.thrift structs this reader uses.
namespace fmd {  // FileMetaData
constexpr int16_t kSchema = 2, kNumRows = 3, kRowGroups = 4, kEncryption = 8;
}
namespace rg {  // RowGroup
constexpr int16_t kColumns = 1, kNumRows = 3;
}
namespace cc {  // ColumnChunk
constexpr int16_t kFilePath = 1, kMeta = 3, kCrypto = 8, kEncryptedMeta = 9;
}
namespace cm {  // ColumnMetaData
constexpr int16_t kType = 1, kCodec = 4, kNumValues = 5, kTotalCompressed = 7, kDataPageOffset = 9,
                  kDictPageOffset = 11;
}
namespace ph {  // PageHeader and its per-type headers
constexpr int16_t kType = 1, kUncompressed = 2, kCompressed = 3, kCrc = 4, kDataV1 = 5, kDict = 7,
                  kDataV2 = 8;
}
enum PageType { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };
enum Encoding {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kDeltaBinaryPacked = 5,
  kRleDictionary = 8,
  kByteStreamSplit = 9
};

inline std::string EncodingName(int64_t e) {
  static const char* kNames[] = {
      "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
      "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
      "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  if (e >= 0 && e < 10) return kNames[e];
  return "encoding " + std::to_string(e);
}

inline uint32_t ReadU32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// A chunk's byte range [*start, *end) from its metadata, checked against the data section (the
// bytes between the leading magic and the footer). "" when it fits, else what is wrong.
std::string ChunkRange(const ThriftValue& md, size_t data_end, size_t* start, size_t* end);

}  // namespace baton::parquet::format
