// The value encodings of a data page for the numeric leaves the parquet reader handles: PLAIN,
// BYTE_STREAM_SPLIT and DELTA_BINARY_PACKED, each decoded into doubles (exact for every value it
// accepts). Dictionary pages are PLAIN; the dictionary indices are RLE (rle_hybrid.h).
//
// Every decoder checks `count` against the bytes it is given before it reads or allocates, and
// returns kData (the caller prefixes the file and column) for a short or malformed buffer.
#pragma once

#include <cstdint>
#include <vector>

#include "schema/status.h"
#include "trainer/parquet/parquet_file.h"

namespace baton::parquet {

// How a leaf's raw values become doubles: its physical type and the logical annotation applied
// to it (unsigned integers, a DECIMAL's scale).
struct ValueType {
  PhysicalType type = PhysicalType::kInt32;
  bool is_unsigned = false;
  int scale = 0;  // DECIMAL: the value is unscaled / 10^scale (0..22, so 10^scale is exact)
};

// Bytes of one PLAIN value (4 or 8), 0 for a type this reader does not handle.
size_t ValueBytes(PhysicalType t);

// Each decoder appends exactly `count` values to *out.
Status DecodePlain(const ValueType& t, const uint8_t* p, size_t n, int64_t count,
                   std::vector<double>* out);
Status DecodeByteStreamSplit(const ValueType& t, const uint8_t* p, size_t n, int64_t count,
                             std::vector<double>* out);
// INT32 and INT64 only; the sums wrap as the format's writers compute them.
Status DecodeDeltaBinaryPacked(const ValueType& t, const uint8_t* p, size_t n, int64_t count,
                               std::vector<double>* out);

}  // namespace baton::parquet
