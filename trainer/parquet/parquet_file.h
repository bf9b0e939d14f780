// ParquetFile: a reader for the numeric columns of parquet files, the ones LeRobot v2.1 writes
// (pyarrow through HF datasets) and the same columns from other writers (DuckDB, parquet-mr,
// arrow-rs), and nothing more. Debian 12 packages no parquet library, so this is the smallest
// reader that covers what those files hold; the scope is in docs/lerobot_import.md:
//
//   footer and page headers   Thrift compact protocol (thrift_compact.h)
//   pages                     data page v1 and v2, dictionary page, index pages skipped;
//                             page CRCs verified when present
//   value encodings           PLAIN, PLAIN_DICTIONARY / RLE_DICTIONARY (a dictionary that
//                             spills to PLAIN included), BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED
//                             (value_decoders.h)
//   levels                    RLE / bit-packed hybrid
//   physical types            FLOAT, DOUBLE, INT32, INT64 leaves, flat or in a LIST
//   logical annotations       signed and unsigned integers, DECIMAL on INT32 / INT64 (scaled)
//   codecs                    UNCOMPRESSED, SNAPPY, GZIP, BROTLI, ZSTD, LZ4, LZ4_RAW
//                             (parquet_codec.h)
//
// Anything else (another encoding or codec, nulls, BYTE_ARRAY values, timestamps and other
// annotations, nested lists, encryption) is a Code::kData Status naming the file, the column and
// the feature (exit 65), never a wrong value. So is a malformed file: every count and size read
// from it is checked against the bytes really there (a page against its chunk, a chunk against
// the data section, Thrift containers against the footer) and against ParquetLimits before
// anything is allocated, and only regular files are opened. The whole file is read into memory
// at Open (episode files are small). Immutable after Open; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"
#include "trainer/parquet/thrift_compact.h"

namespace baton::parquet {

// Parquet's physical types (the values of the format's Type enum).
enum class PhysicalType : int {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};
const char* PhysicalTypeName(PhysicalType t);

// What one page or column may decode to: a file claims sizes that its bytes do not hold back
// (an RLE run of 2^31 zeros takes 6 bytes), so these caps stand between a claim and malloc.
struct ParquetLimits {
  size_t max_page_bytes = size_t(256) << 20;     // a page's uncompressed bytes, and its values
  int64_t max_column_values = int64_t(1) << 28;  // the values of one ReadColumn, all row groups
};

// A leaf column of the schema.
struct ColumnDesc {
  std::string name;  // the top-level field, e.g. "action"
  std::string path;  // the dotted leaf path, e.g. "action.list.element"
  PhysicalType type = PhysicalType::kInt32;
  int leaf_index = 0;        // position among the leaves = position in each row group's columns
  int max_def = 0;           // maximum definition level
  int max_rep = 0;           // maximum repetition level (> 0: a list)
  std::string logical;       // the leaf's annotation ("DECIMAL(9,2)", "UINT_32"), empty when none
  bool is_unsigned = false;  // UINT_* on INT32 / INT64: values read as unsigned
  int scale = 0;             // DECIMAL: values are unscaled / 10^scale
  std::string refused;       // why the annotation cannot be read, empty when it can
};

// One column's values, row by row: row r holds values[offsets[r] .. offsets[r+1]).
struct ColumnData {
  ColumnDesc desc;
  std::vector<int64_t> offsets;  // rows() + 1 entries
  std::vector<double> values;    // every supported type is exact in a double (int64 checked)
  int64_t rows() const { return int64_t(offsets.size()) - 1; }
  // Elements per row when every row has the same count, else -1.
  int64_t Width() const;
};

class ParquetFile {
 public:
  static Result<ParquetFile> Open(const std::string& path, const ParquetLimits& limits = {});
  // The same from bytes in memory; `name` stands for the file in messages.
  static Result<ParquetFile> FromBytes(const std::string& name, std::string bytes,
                                       const ParquetLimits& limits = {});

  const std::string& path() const { return path_; }
  int64_t num_rows() const { return num_rows_; }
  const std::vector<ColumnDesc>& columns() const { return columns_; }
  // The leaf column named by its top-level field ("action") or its full dotted path.
  Result<ColumnData> ReadColumn(const std::string& name) const;

 private:
  Status ReadChunk(const ColumnDesc& c, const ThriftValue& chunk, int64_t rows,
                   ColumnData* out) const;

  std::string path_;
  std::string bytes_;
  size_t data_end_ = 0;  // where the footer starts: no column chunk reaches past it
  ParquetLimits limits_;
  ThriftValue meta_;
  int64_t num_rows_ = 0;
  std::vector<ColumnDesc> columns_;
};

}  // namespace baton::parquet
