// The parquet RLE / bit-packed hybrid encoding, used for definition and repetition levels and for
// dictionary indices: runs of a repeated value and groups of 8 bit-packed values, LSB first.
#pragma once

#include <cstdint>
#include <vector>

#include "schema/status.h"

namespace baton::parquet {

// Decodes exactly `count` values of `bit_width` bits (0..32) from data[0..n) into *out.
// kData when the runs end before `count` values.
Status DecodeRleHybrid(const uint8_t* data, size_t n, int bit_width, int64_t count,
                       std::vector<uint32_t>* out);

// Bits needed for values 0..max_value.
inline int BitWidth(int64_t max_value) {
  int w = 0;
  while ((int64_t(1) << w) <= max_value) ++w;
  return w;
}

}  // namespace baton::parquet
