#include "trainer/parquet/rle_hybrid.h"

#include "trainer/parquet/parquet_format.h"

namespace baton::parquet {

Status DecodeRleHybrid(const uint8_t* data, size_t n, int bit_width, int64_t count,
                       std::vector<uint32_t>* out) {
  if (bit_width < 0 || bit_width > 32) {
    return Status::Data("bit width " + std::to_string(bit_width) + " out of range");
  }
  out->clear();
  out->reserve(size_t(count));
  size_t pos = 0;
  const size_t value_bytes = size_t((bit_width + 7) / 8);
  while (int64_t(out->size()) < count) {
    uint64_t header = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= n || shift > 35) return Status::Data("level/index runs end early");
      const uint8_t b = data[pos++];
      header |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (header & 1) {  // bit-packed: (header >> 1) groups of 8 values
      const uint64_t values = (header >> 1) * 8;
      const uint64_t bytes = (header >> 1) * uint64_t(bit_width);
      if (bytes > n - pos) return Status::Data("bit-packed run past the end of its buffer");
      for (uint64_t v = 0; v < values && int64_t(out->size()) < count; ++v) {
        uint64_t bit = v * uint64_t(bit_width), x = 0;
        for (int k = 0; k < bit_width; ++k, ++bit) {
          x |= uint64_t((data[pos + bit / 8] >> (bit % 8)) & 1) << k;
        }
        out->push_back(uint32_t(x));
      }
      pos += bytes;
    } else {  // RLE: one value repeated (header >> 1) times
      const uint64_t run = header >> 1;
      if (value_bytes > n - pos) return Status::Data("RLE run past the end of its buffer");
      uint32_t x = 0;
      for (size_t k = 0; k < value_bytes; ++k) x |= uint32_t(data[pos + k]) << (8 * k);
      pos += value_bytes;
      if (run == 0) return Status::Data("empty RLE run");
      for (uint64_t k = 0; k < run && int64_t(out->size()) < count; ++k) out->push_back(x);
    }
  }
  return Status::Ok();
}

Status ReadV1Levels(const std::string& page, int64_t n, int max, int bits, int64_t enc, size_t* at,
                    std::vector<uint32_t>* lv) {
  if (max == 0) {
    lv->assign(size_t(n), 0);
    return Status::Ok();
  }
  if (enc != format::kRle) {
    return Status::Data("level encoding " + format::EncodingName(enc) +
                        " is not supported (RLE only)");
  }
  const auto* p = reinterpret_cast<const uint8_t*>(page.data());
  if (page.size() - *at < 4) return Status::Data("levels past the end of the page");
  const uint32_t len = format::ReadU32(p + *at);
  *at += 4;
  if (len > page.size() - *at) return Status::Data("levels past the end of the page");
  BATON_RETURN_IF_ERROR(DecodeRleHybrid(p + *at, len, bits, n, lv));
  *at += len;
  return Status::Ok();
}

}  // namespace baton::parquet
