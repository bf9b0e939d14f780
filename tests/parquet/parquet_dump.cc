// parquet_dump: every column of a parquet file as baton's reader returns it, one line a row:
// "<column> <row> <bits> <bits> ...", each value as the 16 hex digits of its float64 bits, so two
// dumps are equal exactly when every value is. A column that is refused prints one line
// "<column> refused: <message>". Exit 65 when the file itself is refused. For the tests and the
// bench (tests/parquet/duckdb_writers_test.sh, bench/import_bench.sh); links the reader only.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "trainer/parquet/parquet_file.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: parquet_dump FILE.parquet [--quiet]\n");
    return 64;
  }
  const bool quiet = argc > 2 && std::strcmp(argv[2], "--quiet") == 0;  // decode only
  auto f = baton::parquet::ParquetFile::Open(argv[1]);
  if (!f.ok()) {
    std::fprintf(stderr, "%s\n", f.status().message().c_str());
    return 65;
  }
  uint64_t values = 0;
  for (const auto& c : f->columns()) {
    auto r = f->ReadColumn(c.path);
    if (!r.ok()) {
      if (!quiet) std::printf("%s refused: %s\n", c.path.c_str(), r.status().message().c_str());
      continue;
    }
    values += r->values.size();
    if (quiet) continue;
    for (int64_t row = 0; row < r->rows(); ++row) {
      std::printf("%s %" PRId64, c.path.c_str(), row);
      for (int64_t k = r->offsets[size_t(row)]; k < r->offsets[size_t(row) + 1]; ++k) {
        uint64_t bits;
        std::memcpy(&bits, &r->values[size_t(k)], 8);
        std::printf(" %016" PRIx64, bits);
      }
      std::printf("\n");
    }
  }
  if (quiet) std::printf("%" PRIu64 " values\n", values);
  return 0;
}
