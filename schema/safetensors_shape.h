// SafetensorsShapeBytes: a tensor's element count and byte size from its shape, the one overflow
// check that the safetensors reader (a crafted header) and writer (a caller's shape) share.
// Internal to schema/safetensors*.cc. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace baton {

// Element count and byte size of `shape` x `elem_size`, or false when they do not fit in int64.
// Every partial product is checked, the zero dimensions left out: a crafted shape whose byte
// count wraps around 2^64 would otherwise match a small data range, and code that multiplies
// some of the dimensions later must not overflow either.
inline bool SafetensorsShapeBytes(const std::vector<int64_t>& shape, size_t elem_size,
                                  uint64_t* numel, uint64_t* bytes) {
  int64_t nonzero = static_cast<int64_t>(elem_size);
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(nonzero, d, &nonzero)) {
      return false;
    }
  }
  *bytes = empty ? 0 : static_cast<uint64_t>(nonzero);
  *numel = empty ? 0 : *bytes / elem_size;
  return true;
}

}  // namespace baton
