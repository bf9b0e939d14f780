#include "trainer/lerobot/episode_stats.h"

#include <cmath>

#include "trainer/parquet/parquet_file.h"

namespace baton {

Result<std::vector<ColumnStats>> ComputeParquetStats(const std::string& parquet_path,
                                                     std::vector<std::string>* skipped) {
  auto file = parquet::ParquetFile::Open(parquet_path);
  if (!file.ok()) return file.status();
  std::vector<ColumnStats> out;
  for (const auto& c : file->columns()) {
    using parquet::PhysicalType;
    if (c.type != PhysicalType::kFloat && c.type != PhysicalType::kDouble &&
        c.type != PhysicalType::kInt32 && c.type != PhysicalType::kInt64) {
      if (skipped) skipped->push_back(c.path);
      continue;
    }
    auto col = file->ReadColumn(c.path);
    if (!col.ok()) return col.status();
    const int64_t rows = col->rows(), width = col->Width();
    if (width < 0) {
      return Status::Data(
          parquet_path + ": column '" + c.path +
          "': rows hold different numbers of elements (a feature has a fixed shape)");
    }
    ColumnStats s;
    s.name = c.name;
    s.integer = c.type == PhysicalType::kInt32 || c.type == PhysicalType::kInt64;
    s.count = rows;
    s.min.assign(size_t(width), INFINITY);
    s.max.assign(size_t(width), -INFINITY);
    s.mean.assign(size_t(width), 0.0);
    s.std.assign(size_t(width), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < width; ++k) {
        const double v = col->values[size_t(r * width + k)];
        s.min[size_t(k)] = std::min(s.min[size_t(k)], v);
        s.max[size_t(k)] = std::max(s.max[size_t(k)], v);
        s.mean[size_t(k)] += v;
      }
    }
    for (auto& m : s.mean) m /= double(rows);
    // Two passes: the variance of values far from zero keeps its digits.
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < width; ++k) {
        const double d = col->values[size_t(r * width + k)] - s.mean[size_t(k)];
        s.std[size_t(k)] += d * d;
      }
    }
    for (auto& v : s.std) v = std::sqrt(v / double(rows));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace baton
