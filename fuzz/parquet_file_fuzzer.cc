// libFuzzer target: a whole parquet file from bytes, then every column read. Small limits keep a
// claimed size from reaching the fuzzer's memory cap: the reader must refuse it by name instead.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trainer/parquet/parquet_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton::parquet::ParquetLimits limits;
  limits.max_page_bytes = size_t(16) << 20;
  limits.max_column_values = int64_t(1) << 22;
  auto f = baton::parquet::ParquetFile::FromBytes(
      "fuzz.parquet", std::string(reinterpret_cast<const char*>(data), size), limits);
  if (!f.ok()) return 0;
  for (const auto& c : f->columns()) {
    auto r = f->ReadColumn(c.path);
    if (r.ok() && r->offsets.size() != size_t(f->num_rows()) + 1) __builtin_trap();
  }
  return 0;
}
