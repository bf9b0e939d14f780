// The parquet RLE / bit-packed hybrid encoding, used for definition and repetition levels and for
// dictionary indices: runs of a repeated value and groups of 8 bit-packed values, LSB first; and
// a v1 data page's levels, which are a 4-byte length and then such runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton::parquet {

// Decodes exactly `count` values of `bit_width` bits (0..32) from data[0..n) into *out.
// kData when the runs end before `count` values.
Status DecodeRleHybrid(const uint8_t* data, size_t n, int bit_width, int64_t count,
                       std::vector<uint32_t>* out);

// A v1 page's repetition or definition levels at page[*at]: a 4-byte length, then RLE runs,
// each bounded by the page. A level whose maximum is 0 is not stored: n zeros. kData without the
// file and column (the caller adds them).
Status ReadV1Levels(const std::string& page, int64_t n, int max, int bits, int64_t enc, size_t* at,
                    std::vector<uint32_t>* lv);

// Bits needed for values 0..max_value.
inline int BitWidth(int64_t max_value) {
  int w = 0;
  while ((int64_t(1) << w) <= max_value) ++w;
  return w;
}

}  // namespace baton::parquet
