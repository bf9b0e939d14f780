// EpisodeColumnStats: LeRobot's per-episode statistics of every numeric parquet column — min,
// max, mean, std (population) and count per element — the figures LeRobot writes to
// meta/episodes_stats.jsonl, computed the way LeRobot's numpy code does (float32 accumulation for
// float32 vector features, float64 otherwise) from the values as stored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

struct ColumnStats {
  std::string name;
  bool integer = false;  // INT32/INT64 column: min and max print as integers
  std::vector<double> min, max, mean, std;
  int64_t count = 0;
};

// Stats of every supported column of one parquet file, in the file's column order. Columns of
// unsupported types are skipped by name in *skipped; a column that cannot be read is an error.
Result<std::vector<ColumnStats>> ComputeParquetStats(const std::string& parquet_path,
                                                     std::vector<std::string>* skipped);

}  // namespace baton
