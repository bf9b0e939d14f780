#include "trainer/parquet/value_decoders.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace baton::parquet {
namespace {

constexpr int64_t kMaxExactInt = int64_t(1) << 53;

// One value of `t` from its little-endian bytes into *out; kData when an integer is beyond what
// a double holds exactly.
Status Convert(const ValueType& t, uint64_t bits, double* out) {
  int64_t i = 0;
  switch (t.type) {
    case PhysicalType::kFloat: {
      float f;
      const uint32_t b = uint32_t(bits);
      std::memcpy(&f, &b, 4);
      *out = f;
      return Status::Ok();
    }
    case PhysicalType::kDouble:
      std::memcpy(out, &bits, 8);
      return Status::Ok();
    case PhysicalType::kInt32:
      i = t.is_unsigned ? int64_t(uint32_t(bits)) : int64_t(int32_t(uint32_t(bits)));
      break;
    default:
      if (t.is_unsigned && bits > uint64_t(kMaxExactInt)) {
        return Status::Data("UINT64 value " + std::to_string(bits) +
                            " beyond 2^53 (this reader keeps values as doubles)");
      }
      i = int64_t(bits);
  }
  if (i > kMaxExactInt || i < -kMaxExactInt) {
    return Status::Data("INT64 value " + std::to_string(i) +
                        " beyond 2^53 (this reader keeps values as doubles)");
  }
  static const double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  // Both operands exact, so the quotient is the double nearest the decimal value.
  *out = t.scale > 0 ? double(i) / kPow10[t.scale] : double(i);
  return Status::Ok();
}

uint64_t LoadLe(const uint8_t* p, size_t w) {
  uint64_t v = 0;
  for (size_t k = 0; k < w; ++k) v |= uint64_t(p[k]) << (8 * k);
  return v;
}

Status NeedBytes(const char* what, int64_t count, size_t w, size_t n) {
  if (count < 0 || uint64_t(count) > n / w) {
    return Status::Data(std::string(what) + " values: " + std::to_string(count) + " values of " +
                        std::to_string(w) + " bytes, the page holds " + std::to_string(n) +
                        " bytes");
  }
  return Status::Ok();
}

// An unsigned LEB128 varint of at most 10 bytes from p[*pos .. n).
bool Uleb(const uint8_t* p, size_t n, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*pos >= n) return false;
    const uint8_t b = p[(*pos)++];
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace

size_t ValueBytes(PhysicalType t) {
  switch (t) {
    case PhysicalType::kInt32:
    case PhysicalType::kFloat:
      return 4;
    case PhysicalType::kInt64:
    case PhysicalType::kDouble:
      return 8;
    default:
      return 0;
  }
}

Status DecodePlain(const ValueType& t, const uint8_t* p, size_t n, int64_t count,
                   std::vector<double>* out) {
  const size_t w = ValueBytes(t.type);
  BATON_RETURN_IF_ERROR(NeedBytes("PLAIN", count, w, n));
  out->reserve(out->size() + size_t(count));
  for (int64_t k = 0; k < count; ++k, p += w) {
    double d;
    BATON_RETURN_IF_ERROR(Convert(t, LoadLe(p, w), &d));
    out->push_back(d);
  }
  return Status::Ok();
}

Status DecodeByteStreamSplit(const ValueType& t, const uint8_t* p, size_t n, int64_t count,
                             std::vector<double>* out) {
  const size_t w = ValueBytes(t.type);
  BATON_RETURN_IF_ERROR(NeedBytes("BYTE_STREAM_SPLIT", count, w, n));
  // Stream k holds byte k of every value, so the streams are `count` bytes apart.
  const size_t stride = size_t(count);
  out->reserve(out->size() + stride);
  for (size_t v = 0; v < stride; ++v) {
    uint64_t bits = 0;
    for (size_t k = 0; k < w; ++k) bits |= uint64_t(p[k * stride + v]) << (8 * k);
    double d;
    BATON_RETURN_IF_ERROR(Convert(t, bits, &d));
    out->push_back(d);
  }
  return Status::Ok();
}

Status DecodeDeltaBinaryPacked(const ValueType& t, const uint8_t* p, size_t n, int64_t count,
                               std::vector<double>* out) {
  if (t.type != PhysicalType::kInt32 && t.type != PhysicalType::kInt64) {
    return Status::Data(std::string("DELTA_BINARY_PACKED values of type ") +
                        PhysicalTypeName(t.type) + " (the encoding is for INT32 and INT64)");
  }
  const int max_width = t.type == PhysicalType::kInt32 ? 32 : 64;
  size_t pos = 0;
  uint64_t block = 0, miniblocks = 0, total = 0, first = 0;
  if (!Uleb(p, n, &pos, &block) || !Uleb(p, n, &pos, &miniblocks) || !Uleb(p, n, &pos, &total) ||
      !Uleb(p, n, &pos, &first)) {
    return Status::Data("DELTA_BINARY_PACKED header truncated");
  }
  // The format: a block is a multiple of 128 values, each miniblock a multiple of 32.
  if (block == 0 || block % 128 != 0 || block > (1u << 20) || miniblocks == 0 ||
      block % miniblocks != 0 || (block / miniblocks) % 32 != 0) {
    return Status::Data("DELTA_BINARY_PACKED block of " + std::to_string(block) + " values in " +
                        std::to_string(miniblocks) + " miniblocks is malformed");
  }
  if (total != uint64_t(count)) {
    return Status::Data("DELTA_BINARY_PACKED holds " + std::to_string(total) +
                        " values, the page " + std::to_string(count));
  }
  if (count == 0) return Status::Ok();
  const uint64_t per_mini = block / miniblocks;
  uint64_t value = (first >> 1) ^ (~(first & 1) + 1);  // zigzag
  out->reserve(out->size() + size_t(count));
  auto emit = [&](uint64_t v) -> Status {
    const uint64_t bits = t.type == PhysicalType::kInt32 ? uint64_t(uint32_t(v)) : v;
    double d;
    BATON_RETURN_IF_ERROR(Convert(t, bits, &d));
    out->push_back(d);
    return Status::Ok();
  };
  BATON_RETURN_IF_ERROR(emit(value));
  int64_t left = count - 1;
  while (left > 0) {
    uint64_t zz;
    if (!Uleb(p, n, &pos, &zz)) return Status::Data("DELTA_BINARY_PACKED block truncated");
    const uint64_t min_delta = (zz >> 1) ^ (~(zz & 1) + 1);
    if (miniblocks > n - pos) return Status::Data("DELTA_BINARY_PACKED bit widths truncated");
    const uint8_t* widths = p + pos;
    pos += miniblocks;
    for (uint64_t m = 0; m < miniblocks && left > 0; ++m) {
      const int w = widths[m];
      if (w > max_width) {
        return Status::Data("DELTA_BINARY_PACKED bit width " + std::to_string(w) + " above " +
                            std::to_string(max_width));
      }
      const uint64_t take = std::min<uint64_t>(per_mini, uint64_t(left));
      // The last miniblock may be cut short of its padding; the values it holds must be there.
      const uint64_t need = (take * uint64_t(w) + 7) / 8, full = per_mini * uint64_t(w) / 8;
      if (need > n - pos) return Status::Data("DELTA_BINARY_PACKED miniblock truncated");
      for (uint64_t v = 0; v < take; ++v) {
        uint64_t bit = v * uint64_t(w), x = 0;
        for (int k = 0; k < w; ++k, ++bit) x |= uint64_t((p[pos + bit / 8] >> (bit % 8)) & 1) << k;
        value += min_delta + x;
        BATON_RETURN_IF_ERROR(emit(value));
      }
      pos += std::min<uint64_t>(full, n - pos);
      left -= int64_t(take);
    }
  }
  return Status::Ok();
}

}  // namespace baton::parquet
