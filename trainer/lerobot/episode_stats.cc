#include "trainer/lerobot/episode_stats.h"

#include <algorithm>
#include <cmath>

#include "schema/input_file.h"
#include "trainer/parquet/parquet_file.h"

namespace baton {
namespace {

// float64, two passes: what a careful reader computes, and within 1e-6 of LeRobot's figures for
// integer columns (numpy averages integers in float64) and scalar float columns (numpy sums a
// contiguous axis pairwise, nearly exact).
void Float64Stats(const std::vector<double>& v, int64_t rows, int64_t width, ColumnStats* s) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < width; ++k) s->mean[size_t(k)] += v[size_t(r * width + k)];
  for (auto& m : s->mean) m /= double(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < width; ++k) {
      const double d = v[size_t(r * width + k)] - s->mean[size_t(k)];
      s->std[size_t(k)] += d * d;
    }
  }
  for (auto& x : s->std) x = std::sqrt(x / double(rows));
}

// A float32 vector feature, as LeRobot computes it: numpy's mean and std over axis 0 of a
// float32 [rows, width] array accumulate in float32, row after row (numpy sums pairwise only
// along a contiguous axis). float64 sums differ from those by more than 1e-6 on real episodes.
void Float32RowStats(const std::vector<double>& v, int64_t rows, int64_t width, ColumnStats* s) {
  std::vector<float> sum(size_t(width), 0.0f), sq(size_t(width), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < width; ++k) sum[size_t(k)] += float(v[size_t(r * width + k)]);
  std::vector<float> mean(static_cast<size_t>(width));
  for (int64_t k = 0; k < width; ++k) mean[size_t(k)] = sum[size_t(k)] / float(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < width; ++k) {
      const float d = float(v[size_t(r * width + k)]) - mean[size_t(k)];
      sq[size_t(k)] += d * d;
    }
  }
  for (int64_t k = 0; k < width; ++k) {
    s->mean[size_t(k)] = mean[size_t(k)];
    s->std[size_t(k)] = std::sqrt(sq[size_t(k)] / float(rows));
  }
}

}  // namespace

Result<std::vector<ColumnStats>> ComputeParquetStats(const std::string& parquet_path,
                                                     std::vector<std::string>* skipped) {
  if (Status st = CheckRegularFile(parquet_path); !st.ok()) return st;
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
      }
    }
    if (c.type == PhysicalType::kFloat && c.max_rep > 0) {
      Float32RowStats(col->values, rows, width, &s);
    } else {
      Float64Stats(col->values, rows, width, &s);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace baton
