#include "trainer/parquet/parquet_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "schema/file_kind.h"
#include "trainer/parquet/parquet_codec.h"
#include "trainer/parquet/parquet_format.h"
#include "trainer/parquet/parquet_schema.h"
#include "trainer/parquet/rle_hybrid.h"
#include "trainer/parquet/value_decoders.h"

namespace baton::parquet {
using namespace format;

namespace format {

// A chunk's byte range [*start, *end) from its metadata, checked against the data section (the
// bytes between the leading magic and the footer). "" when it fits, else what is wrong.
std::string ChunkRange(const ThriftValue& md, size_t data_end, size_t* start, size_t* end) {
  const int64_t num_values = md.Int(cm::kNumValues, -1);
  const int64_t total = md.Int(cm::kTotalCompressed, -1);
  int64_t first = md.Int(cm::kDataPageOffset, -1);
  const int64_t dict_off = md.Int(cm::kDictPageOffset, -1);
  if (dict_off > 0 && dict_off < first) first = dict_off;  // 0 stands for "none" in some writers
  if (num_values < 0 || total < 0) return "column chunk without num_values or its size";
  *start = *end = 0;
  if (num_values == 0) return "";  // a zero-row chunk: no pages, wherever it points
  if (first < 4 || size_t(first) >= data_end || uint64_t(total) > data_end - size_t(first)) {
    return "column chunk bytes [" + std::to_string(first) + ", +" + std::to_string(total) +
           ") outside the file's data (" + std::to_string(data_end) + " bytes)";
  }
  *start = size_t(first);
  *end = size_t(first) + size_t(total);
  return "";
}

}  // namespace format

namespace {

// The whole file, refused unopened unless it is a regular file: a FIFO would block the open and
// a device never ends.
Status ReadRegularFile(const std::string& path, std::string* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::Data(path + ": cannot read: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Data(path + ": it is " + FileKind(st.st_mode) + ", not a regular file");
  }
  // O_NONBLOCK: a FIFO swapped in after the stat must not block the open either.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Status::Data(path + ": cannot open: " + std::strerror(errno));
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::Data(path + ": it is " + FileKind(st.st_mode) + ", not a regular file");
  }
  // The whole file is read into memory: episode files are kilobytes to megabytes, so a file
  // beyond 4 GiB is not one (and would not be allocated on a typical node anyway).
  constexpr int64_t kMaxFileBytes = int64_t(4) << 30;
  if (st.st_size > kMaxFileBytes) {
    ::close(fd);
    return Status::Data(path + ": " + std::to_string(st.st_size) +
                        " bytes, more than the reader's 4 GiB (it reads whole files)");
  }
  out->resize(size_t(st.st_size));
  size_t got = 0;
  while (got < out->size()) {
    const ssize_t n = ::read(fd, out->data() + got, out->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += size_t(n);
  }
  ::close(fd);
  if (got != out->size()) {
    return Status::Data(path + ": read " + std::to_string(got) + " of its " +
                        std::to_string(out->size()) + " bytes (it changed while read?)");
  }
  return Status::Ok();
}

// The row groups as a whole, before any column is read: each holds a chunk for every leaf,
// inside the data section, with one entry per row for a flat leaf, and the groups' rows add up
// to the footer's num_rows. A file that fails here is refused whichever column is asked for.
Status CheckRowGroups(const std::string& name, const ThriftValue* groups,
                      const std::vector<ColumnDesc>& columns, size_t data_end, int64_t num_rows) {
  auto bad = [&](const std::string& why) { return Status::Data(name + ": " + why); };
  int64_t rows = 0;
  if (groups && groups->kind == ThriftValue::Kind::kList) {
    for (size_t g = 0; g < groups->list.size(); ++g) {
      const std::string where = "row group " + std::to_string(g) + ": ";
      const ThriftValue& group = groups->list[g];
      const ThriftValue* cols = group.Field(rg::kColumns);
      if (!cols || cols->kind != ThriftValue::Kind::kList || cols->list.size() != columns.size()) {
        return bad(where + "its column chunks do not match the schema's " +
                   std::to_string(columns.size()) + " leaves");
      }
      const int64_t group_rows = group.Int(rg::kNumRows, -1);
      if (group_rows < 0 || group_rows > INT64_MAX - rows) {
        return bad(where + "a row count of " + std::to_string(group_rows));
      }
      rows += group_rows;
      for (size_t k = 0; k < cols->list.size(); ++k) {
        const ThriftValue* md = cols->list[k].Field(cc::kMeta);
        if (!md || md->kind != ThriftValue::Kind::kStruct) continue;  // refused when read
        size_t start, end;
        const std::string why = ChunkRange(*md, data_end, &start, &end);
        const ColumnDesc& c = columns[k];
        if (!why.empty()) return bad(where + "column '" + c.path + "': " + why);
        const int64_t values = md->Int(cm::kNumValues, -1);
        if ((c.max_rep == 0 && values != group_rows) || (c.max_rep > 0 && values < group_rows)) {
          return bad(where + "column '" + c.path + "': a chunk of " + std::to_string(values) +
                     " values for " + std::to_string(group_rows) + " rows");
        }
      }
    }
  }
  if (rows != num_rows) {
    return bad("the row groups hold " + std::to_string(rows) + " rows, the footer says " +
               std::to_string(num_rows));
  }
  return Status::Ok();
}

}  // namespace

const char* PhysicalTypeName(PhysicalType t) {
  static const char* kNames[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                 "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  const int i = int(t);
  return i >= 0 && i < 8 ? kNames[i] : "unknown type";
}

int64_t ColumnData::Width() const {
  if (rows() <= 0) return 0;
  const int64_t w = offsets[1] - offsets[0];
  for (int64_t r = 1; r < rows(); ++r) {
    if (offsets[r + 1] - offsets[r] != w) return -1;
  }
  return w;
}

Result<ParquetFile> ParquetFile::Open(const std::string& path, const ParquetLimits& limits) {
  std::string bytes;
  BATON_RETURN_IF_ERROR(ReadRegularFile(path, &bytes));
  return FromBytes(path, std::move(bytes), limits);
}

Result<ParquetFile> ParquetFile::FromBytes(const std::string& name, std::string bytes,
                                           const ParquetLimits& limits) {
  ParquetFile f;
  f.path_ = name;
  f.bytes_ = std::move(bytes);
  f.limits_ = limits;
  const std::string& b = f.bytes_;
  auto bad = [&](const std::string& why) { return Status::Data(name + ": " + why); };
  // An encrypted footer replaces both magics with PARE.
  if ((b.size() >= 4 && b.compare(0, 4, "PARE") == 0) ||
      (b.size() >= 8 && b.compare(b.size() - 4, 4, "PARE") == 0)) {
    return bad("an encrypted parquet file (encrypted footer; encryption is not supported)");
  }
  if (b.size() < 12 || b.compare(0, 4, "PAR1") != 0)
    return bad("not a parquet file (no PAR1 magic)");
  if (b.compare(b.size() - 4, 4, "PAR1") != 0) {
    return bad("truncated parquet file (no PAR1 magic at the end)");
  }
  const uint32_t footer_len = ReadU32(reinterpret_cast<const uint8_t*>(b.data()) + b.size() - 8);
  if (footer_len > b.size() - 12)
    return bad("footer length " + std::to_string(footer_len) + " beyond the file");
  f.data_end_ = b.size() - 8 - footer_len;
  const uint8_t* footer = reinterpret_cast<const uint8_t*>(b.data()) + f.data_end_;
  size_t pos = 0;
  auto meta = ReadThriftStruct(footer, footer_len, &pos);
  if (!meta.ok()) return bad("corrupt footer: " + meta.status().message());
  f.meta_ = std::move(meta).value();
  if (f.meta_.Field(fmd::kEncryption)) {
    return bad(
        "an encrypted parquet file (plaintext footer, encrypted columns; encryption is "
        "not supported)");
  }
  f.num_rows_ = f.meta_.Int(fmd::kNumRows, -1);
  const ThriftValue* schema = f.meta_.Field(fmd::kSchema);
  if (f.num_rows_ < 0 || !schema || schema->kind != ThriftValue::Kind::kList ||
      schema->list.empty()) {
    return bad("footer without num_rows or schema");
  }
  const Status st = ReadSchema(*schema, &f.columns_);
  if (!st.ok()) return bad(st.message());
  BATON_RETURN_IF_ERROR(
      CheckRowGroups(name, f.meta_.Field(fmd::kRowGroups), f.columns_, f.data_end_, f.num_rows_));
  return f;
}

Result<ColumnData> ParquetFile::ReadColumn(const std::string& name) const {
  const ColumnDesc* found = nullptr;
  int matches = 0;
  for (const auto& c : columns_) {
    if (c.path == name || c.name == name) {
      found = &c;
      ++matches;
    }
  }
  if (!found) return Status::Data(path_ + ": no column '" + name + "'");
  if (matches > 1) {
    return Status::Data(path_ + ": column '" + name +
                        "' is a struct of several leaves (not supported: name one leaf)");
  }
  const ColumnDesc& c = *found;
  auto bad = [&](const std::string& why) {
    return Status::Data(path_ + ": column '" + c.path + "': " + why);
  };
  if (int(c.type) < 0 || int(c.type) > 7) {
    return bad("the schema gives an unknown physical type " + std::to_string(int(c.type)) +
               " (a corrupt schema)");
  }
  if (ValueBytes(c.type) == 0) {
    return bad(std::string("physical type ") + PhysicalTypeName(c.type) +
               " is not supported (this reader handles FLOAT, DOUBLE, INT32 and INT64)");
  }
  if (!c.refused.empty()) return bad(c.refused);
  if (c.max_rep > 1) return bad("nested lists are not supported");
  ColumnData out;
  out.desc = c;
  const ThriftValue* groups = meta_.Field(fmd::kRowGroups);
  int64_t rows = 0;
  if (groups && groups->kind == ThriftValue::Kind::kList) {
    for (const auto& g : groups->list) {
      const ThriftValue* cols = g.Field(rg::kColumns);
      if (!cols || cols->kind != ThriftValue::Kind::kList ||
          cols->list.size() <= size_t(c.leaf_index)) {
        return bad("a row group without this column");
      }
      const int64_t group_rows = g.Int(rg::kNumRows, -1);
      if (group_rows < 0 || group_rows > num_rows_ - rows) {
        return bad("a row group of " + std::to_string(group_rows) + " rows (the file has " +
                   std::to_string(num_rows_) + ")");
      }
      rows += group_rows;
      BATON_RETURN_IF_ERROR(ReadChunk(c, cols->list[size_t(c.leaf_index)], group_rows, &out));
    }
  }
  out.offsets.push_back(int64_t(out.values.size()));
  if (out.rows() != num_rows_) {
    return bad("holds " + std::to_string(out.rows()) + " rows, the footer says " +
               std::to_string(num_rows_));
  }
  return out;
}

}  // namespace baton::parquet
