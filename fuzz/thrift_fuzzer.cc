// libFuzzer target: the Thrift compact decoder on arbitrary bytes, struct after struct (the way
// page headers follow each other in a chunk).
#include <cstddef>
#include <cstdint>

#include "trainer/parquet/thrift_compact.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t pos = 0;
  while (pos < size) {
    const size_t before = pos;
    auto v = baton::parquet::ReadThriftStruct(data, size, &pos);
    if (!v.ok()) break;
    if (pos <= before || pos > size) __builtin_trap();  // every struct takes a byte at least
  }
  return 0;
}
