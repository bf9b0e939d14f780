// ParquetFile::ReadChunk: one column chunk's pages (dictionary, data v1 and v2) checked,
// decompressed and decoded into a ColumnData; the rest of the reader is parquet_file.cc.
//
// ReadChunk checks the chunk's metadata; a ChunkReader then walks its pages, one at a time:
//
//   NextPage               the page header, its sizes bounded by the chunk and the limits, CRC
//   ReadDictionaryPage     the chunk's dictionary, only before its first data page
//   ReadDataPage           one data page: its entry count bounded, then
//     LayOutV1 / LayOutV2    its levels and the bytes of its values (where the versions differ)
//     CheckLevels            every entry a value, every page starting a row
//     DecodeValues           the values by their encoding, dictionary indices included
//
// Every size read from the file is checked against the bytes really there, and against
// ParquetLimits, before anything is allocated; every error names the file and the column.
#include <zlib.h>

#include <cstring>

#include "trainer/parquet/parquet_codec.h"
#include "trainer/parquet/parquet_file.h"
#include "trainer/parquet/parquet_format.h"
#include "trainer/parquet/parquet_schema.h"
#include "trainer/parquet/rle_hybrid.h"
#include "trainer/parquet/value_decoders.h"

namespace baton::parquet {
using namespace format;
namespace {

// A page header read and checked against its chunk.
struct Page {
  ThriftValue hdr;
  int64_t type = -1;
  int64_t csize = 0;              // bytes in the chunk, within it
  int64_t usize = 0;              // bytes once decompressed, within ParquetLimits::max_page_bytes
  const uint8_t* body = nullptr;  // the csize bytes after the header, their CRC verified
};

// A data page laid out: its levels decoded into the reader's buffers, its values' bytes found.
struct DataPage {
  int64_t n = 0;                    // entries: levels, and values (nulls are refused)
  int64_t encoding = 0;             // of the values
  int64_t page_rows = -1;           // rows the header states (v2 only; -1 when not stated)
  const uint8_t* values = nullptr;  // nullptr for an empty v2 values section
  size_t values_len = 0;
};

// One column chunk's pages appended to a ColumnData. It owns what the pages share: the
// dictionary, the counts so far and the buffers reused page to page; it borrows the rest, which
// outlive it (one ReadChunk call).
class ChunkReader {
 public:
  ChunkReader(const std::string& file, const ColumnDesc& c, const ParquetLimits& limits,
              int64_t codec, int64_t num_values, int64_t rows, ColumnData* out)
      : file_(file),
        c_(c),
        limits_(limits),
        codec_(codec),
        num_values_(num_values),
        rows_(rows),
        rep_bits_(BitWidth(c.max_rep)),
        def_bits_(BitWidth(c.max_def)),
        vt_{c.type, c.is_unsigned, c.scale},
        out_(out) {}

  // The pages in data[start, end), which must hold the chunk's num_values values in its rows.
  Status ReadPages(const uint8_t* data, size_t start, size_t end);

 private:
  Status Bad(const std::string& why) const {
    return Status::Data(file_ + ": column '" + c_.path + "': " + why);
  }
  Status NextPage(const uint8_t* data, size_t end, size_t* pos, Page* page) const;
  Status ReadDictionaryPage(const Page& p);
  Status ReadDataPage(const Page& p);
  Status LayOutV1(const Page& p, const ThriftValue& dh, DataPage* dp);
  Status LayOutV2(const Page& p, const ThriftValue& dh, DataPage* dp);
  Status LayOutV2Values(const uint8_t* rest, size_t rest_c, size_t rest_u, bool compressed,
                        DataPage* dp);
  Status CheckLevels(const DataPage& dp, int64_t* new_rows) const;
  Status DecodeValues(const DataPage& dp);
  Status DecodeDictionaryIndices(const DataPage& dp);

  const std::string& file_;
  const ColumnDesc& c_;
  const ParquetLimits& limits_;
  const int64_t codec_, num_values_, rows_;
  const int rep_bits_, def_bits_;
  const ValueType vt_;
  ColumnData* out_;
  std::vector<double> dict_;
  bool have_dict_ = false;
  int64_t seen_ = 0, rows_seen_ = 0;  // values and rows of the data pages read so far
  std::string page_;                  // the page decompressed; a DataPage's values may point in
  std::vector<uint32_t> rep_, def_, idx_;
};

Status ChunkReader::ReadPages(const uint8_t* data, size_t start, size_t end) {
  size_t pos = start;
  while (pos < end) {
    Page p;
    BATON_RETURN_IF_ERROR(NextPage(data, end, &pos, &p));
    if (p.type == kIndexPage) continue;
    if (p.type == kDictionaryPage) {
      BATON_RETURN_IF_ERROR(ReadDictionaryPage(p));
      continue;
    }
    if (p.type != kDataPage && p.type != kDataPageV2) {
      return Bad("page type " + std::to_string(p.type) + " is not supported");
    }
    BATON_RETURN_IF_ERROR(ReadDataPage(p));
  }
  if (seen_ != num_values_ || rows_seen_ != rows_) {
    return Bad("the chunk's pages hold " + std::to_string(seen_) + " values in " +
               std::to_string(rows_seen_) + " rows, its metadata says " +
               std::to_string(num_values_) + " values in " + std::to_string(rows_) + " rows");
  }
  return Status::Ok();
}

Status ChunkReader::NextPage(const uint8_t* data, size_t end, size_t* pos, Page* page) const {
  auto hdr_r = ReadThriftStruct(data, end, pos);
  if (!hdr_r.ok()) return Bad("corrupt page header: " + hdr_r.status().message());
  page->hdr = std::move(hdr_r).value();
  const ThriftValue& hdr = page->hdr;
  page->type = hdr.Int(ph::kType, -1);
  page->csize = hdr.Int(ph::kCompressed, -1);
  page->usize = hdr.Int(ph::kUncompressed, -1);
  const int64_t csize = page->csize, usize = page->usize;
  if (csize < 0 || usize < 0 || uint64_t(csize) > end - *pos) {
    return Bad("a page of " + std::to_string(csize) + " bytes past the end of its chunk (" +
               std::to_string(end - *pos) + " bytes left)");
  }
  if (uint64_t(usize) > limits_.max_page_bytes) {
    return Bad("a page of " + std::to_string(usize) +
               " uncompressed bytes, above the reader's limit of " +
               std::to_string(limits_.max_page_bytes));
  }
  page->body = data + *pos;
  *pos += size_t(csize);
  if (const ThriftValue* crc = hdr.Field(ph::kCrc); crc && crc->kind == ThriftValue::Kind::kInt) {
    const uint32_t want = uint32_t(crc->i), got = uint32_t(crc32_z(0, page->body, size_t(csize)));
    if (want != got) {
      return Bad("page CRC mismatch (the file says " + std::to_string(want) + ", the page's " +
                 std::to_string(csize) + " bytes give " + std::to_string(got) +
                 "): a corrupt page");
    }
  }
  return Status::Ok();
}

Status ChunkReader::ReadDictionaryPage(const Page& p) {
  const ThriftValue* dh = p.hdr.Field(ph::kDict);
  if (!dh) return Bad("dictionary page without its header");
  if (have_dict_ || seen_ > 0) return Bad("a dictionary page after the chunk's first page");
  const int64_t enc = dh->Int(2, kPlain);
  if (enc != kPlain && enc != kPlainDictionary) {
    return Bad("dictionary page encoding " + EncodingName(enc) + " is not supported");
  }
  const int64_t nd = dh->Int(1, -1);
  if (nd < 0 || uint64_t(nd) > uint64_t(p.usize) / ValueBytes(c_.type)) {
    return Bad("a dictionary of " + std::to_string(nd) + " values in a page of " +
               std::to_string(p.usize) + " bytes");
  }
  const Status st = Decompress(codec_, p.body, size_t(p.csize), size_t(p.usize), &page_);
  if (!st.ok()) return Bad(st.message());
  const Status pst =
      DecodePlain(vt_, reinterpret_cast<const uint8_t*>(page_.data()), page_.size(), nd, &dict_);
  if (!pst.ok()) return Bad("dictionary page: " + pst.message());
  have_dict_ = true;
  return Status::Ok();
}

Status ChunkReader::ReadDataPage(const Page& p) {
  const ThriftValue* dh = p.hdr.Field(p.type == kDataPage ? ph::kDataV1 : ph::kDataV2);
  if (!dh) return Bad("data page without its header");
  DataPage dp;
  dp.n = dh->Int(1, -1);
  if (dp.n < 0 || dp.n > num_values_ - seen_) {
    return Bad("a page of " + std::to_string(dp.n) + " values, the chunk has " +
               std::to_string(num_values_ - seen_) + " left of its " + std::to_string(num_values_));
  }
  // Levels and values take 16 bytes an entry once decoded.
  if (uint64_t(dp.n) > limits_.max_page_bytes / 16) {
    return Bad("a page of " + std::to_string(dp.n) + " values, above the reader's limit of " +
               std::to_string(limits_.max_page_bytes / 16));
  }
  BATON_RETURN_IF_ERROR(p.type == kDataPage ? LayOutV1(p, *dh, &dp) : LayOutV2(p, *dh, &dp));
  int64_t new_rows = 0;
  BATON_RETURN_IF_ERROR(CheckLevels(dp, &new_rows));
  const size_t before = out_->values.size();
  BATON_RETURN_IF_ERROR(DecodeValues(dp));
  // Rows: a repetition level of 0 starts a new row (every entry holds a value, checked above).
  for (int64_t k = 0; k < dp.n; ++k) {
    if (rep_[size_t(k)] == 0) out_->offsets.push_back(int64_t(before) + k);
  }
  seen_ += dp.n;
  rows_seen_ += new_rows;
  return Status::Ok();
}

// v1: the whole page is compressed; in it, each stored level's length and runs, then the values.
Status ChunkReader::LayOutV1(const Page& p, const ThriftValue& dh, DataPage* dp) {
  dp->encoding = dh.Int(2, -1);
  const Status st = Decompress(codec_, p.body, size_t(p.csize), size_t(p.usize), &page_);
  if (!st.ok()) return Bad(st.message());
  size_t at = 0;
  Status lst = ReadV1Levels(page_, dp->n, c_.max_rep, rep_bits_, dh.Int(4, kRle), &at, &rep_);
  if (lst.ok()) {
    lst = ReadV1Levels(page_, dp->n, c_.max_def, def_bits_, dh.Int(3, kRle), &at, &def_);
  }
  if (!lst.ok()) return Bad(lst.message());
  dp->values = reinterpret_cast<const uint8_t*>(page_.data()) + at;
  dp->values_len = page_.size() - at;
  return Status::Ok();
}

// v2: the levels come first and uncompressed, their lengths in the header; only the values
// section after them may be compressed.
Status ChunkReader::LayOutV2(const Page& p, const ThriftValue& dh, DataPage* dp) {
  const int64_t n = dp->n, csize = p.csize, usize = p.usize;
  dp->encoding = dh.Int(4, -1);
  dp->page_rows = dh.Int(3, -1);
  if (dh.Int(2, 0) != 0) {
    return Bad("null entries (" + std::to_string(dh.Int(2, 0)) + " in a page) are not supported");
  }
  const int64_t def_len = dh.Int(5, 0), rep_len = dh.Int(6, 0);
  const bool compressed = dh.Int(7, 1) != 0;
  // Each length is checked on its own before they are added, so the sum cannot wrap.
  if (def_len < 0 || rep_len < 0 || def_len > csize || rep_len > csize - def_len ||
      def_len + rep_len > usize) {
    return Bad("data page v2 level lengths " + std::to_string(rep_len) + " + " +
               std::to_string(def_len) + " beyond the page's " + std::to_string(csize) + " bytes");
  }
  Status st = Status::Ok();
  if (c_.max_rep > 0)
    st = DecodeRleHybrid(p.body, size_t(rep_len), rep_bits_, n, &rep_);
  else
    rep_.assign(size_t(n), 0);
  if (st.ok() && c_.max_def > 0) {
    st = DecodeRleHybrid(p.body + rep_len, size_t(def_len), def_bits_, n, &def_);
  } else if (st.ok()) {
    def_.assign(size_t(n), 0);
  }
  if (!st.ok()) return Bad(st.message());
  const uint8_t* rest = p.body + rep_len + def_len;
  return LayOutV2Values(rest, size_t(csize - rep_len - def_len), size_t(usize - rep_len - def_len),
                        compressed, dp);
}

// A v2 page's values section: `rest_c` bytes at `rest`, `rest_u` once decompressed.
Status ChunkReader::LayOutV2Values(const uint8_t* rest, size_t rest_c, size_t rest_u,
                                   bool compressed, DataPage* dp) {
  if (rest_u == 0) {
    dp->values_len = 0;  // no values section: a codec is not asked to inflate nothing
  } else if (compressed) {
    const Status st = Decompress(codec_, rest, rest_c, rest_u, &page_);
    if (!st.ok()) return Bad(st.message());
    dp->values = reinterpret_cast<const uint8_t*>(page_.data());
    dp->values_len = page_.size();
  } else {
    if (rest_c != rest_u) {
      return Bad("an uncompressed v2 values section of " + std::to_string(rest_c) +
                 " bytes, its header says " + std::to_string(rest_u));
    }
    dp->values = rest;
    dp->values_len = rest_c;
  }
  return Status::Ok();
}

// Every entry must hold a value (nulls are refused) and every page start a row.
Status ChunkReader::CheckLevels(const DataPage& dp, int64_t* new_rows) const {
  *new_rows = 0;
  for (int64_t k = 0; k < dp.n; ++k) {
    const uint32_t d = def_[size_t(k)], r = rep_[size_t(k)];
    if (d != uint32_t(c_.max_def)) {
      if (d > uint32_t(c_.max_def)) {
        return Bad("definition level " + std::to_string(d) + " above the column's maximum " +
                   std::to_string(c_.max_def));
      }
      return Bad("null or empty-list entries (definition level " + std::to_string(d) + " of " +
                 std::to_string(c_.max_def) + ") are not supported");
    }
    if (r > uint32_t(c_.max_rep)) {
      return Bad("repetition level " + std::to_string(r) + " above the column's maximum " +
                 std::to_string(c_.max_rep));
    }
    if (k == 0 && r != 0) {
      return Bad("a page that starts inside a row (first repetition level " + std::to_string(r) +
                 ", not 0)");
    }
    if (r == 0) ++*new_rows;
  }
  if (dp.page_rows >= 0 && dp.page_rows != *new_rows) {
    return Bad("a data page v2 of " + std::to_string(dp.page_rows) + " rows whose levels hold " +
               std::to_string(*new_rows));
  }
  if (*new_rows > rows_ - rows_seen_) {
    return Bad("pages hold more rows than the row group's " + std::to_string(rows_));
  }
  return Status::Ok();
}

Status ChunkReader::DecodeValues(const DataPage& dp) {
  Status st = Status::Ok();
  switch (dp.encoding) {
    case kPlain:
      st = DecodePlain(vt_, dp.values, dp.values_len, dp.n, &out_->values);
      break;
    case kByteStreamSplit:
      st = DecodeByteStreamSplit(vt_, dp.values, dp.values_len, dp.n, &out_->values);
      break;
    case kDeltaBinaryPacked:
      st = DecodeDeltaBinaryPacked(vt_, dp.values, dp.values_len, dp.n, &out_->values);
      break;
    case kRleDictionary:
    case kPlainDictionary:
      return DecodeDictionaryIndices(dp);
    default:
      return Bad("value encoding " + EncodingName(dp.encoding) +
                 " is not supported (this reader handles PLAIN, RLE_DICTIONARY, "
                 "BYTE_STREAM_SPLIT and DELTA_BINARY_PACKED)");
  }
  if (!st.ok()) return Bad(st.message());
  return Status::Ok();
}

// The values section: one byte of bit width, then the indices into the dictionary as RLE runs.
Status ChunkReader::DecodeDictionaryIndices(const DataPage& dp) {
  if (!have_dict_) return Bad("dictionary-encoded page without a dictionary page");
  if (dp.n == 0) return Status::Ok();
  if (dp.values_len < 1) return Bad("dictionary indices missing");
  const uint8_t width = dp.values[0];
  // Writers size the indices to the dictionary; narrower ones cannot address it, and
  // reading them would repeat its first entries.
  if (dict_.size() > 1 && width < BitWidth(int64_t(dict_.size()) - 1)) {
    return Bad("dictionary indices of bit width " + std::to_string(width) +
               " cannot address a dictionary of " + std::to_string(dict_.size()) + " values");
  }
  const Status st = DecodeRleHybrid(dp.values + 1, dp.values_len - 1, width, dp.n, &idx_);
  if (!st.ok()) return Bad("dictionary indices: " + st.message());
  for (uint32_t i : idx_) {
    if (i >= dict_.size()) {
      return Bad("dictionary index " + std::to_string(i) + " out of range (the dictionary holds " +
                 std::to_string(dict_.size()) + ")");
    }
    out_->values.push_back(dict_[i]);
  }
  return Status::Ok();
}

}  // namespace

Status ParquetFile::ReadChunk(const ColumnDesc& c, const ThriftValue& chunk, int64_t rows,
                              ColumnData* out) const {
  auto bad = [&](const std::string& why) {
    return Status::Data(path_ + ": column '" + c.path + "': " + why);
  };
  if (chunk.Field(cc::kFilePath)) return bad("column data in another file (not supported)");
  if (chunk.Field(cc::kCrypto) || chunk.Field(cc::kEncryptedMeta)) {
    return bad("an encrypted column (encryption is not supported)");
  }
  const ThriftValue* md = chunk.Field(cc::kMeta);
  if (!md || md->kind != ThriftValue::Kind::kStruct) return bad("column chunk without metadata");
  if (md->Int(cm::kType, -1) != int64_t(c.type)) {
    return bad(std::string("the chunk's type ") +
               PhysicalTypeName(PhysicalType(md->Int(cm::kType))) + " differs from the schema's " +
               PhysicalTypeName(c.type));
  }
  const int64_t codec = md->Int(cm::kCodec, 0);
  const int64_t num_values = md->Int(cm::kNumValues, -1);
  size_t start = 0, end = 0;
  const std::string range = ChunkRange(*md, data_end_, &start, &end);
  if (!range.empty()) return bad(range);
  // A flat column has one entry (value or null) per row; a list at least one per row.
  if ((c.max_rep == 0 && num_values != rows) || (c.max_rep > 0 && num_values < rows)) {
    return bad("a chunk of " + std::to_string(num_values) + " values for " + std::to_string(rows) +
               " rows");
  }
  if (num_values > limits_.max_column_values - int64_t(out->values.size())) {
    return bad(std::to_string(num_values) + " values, above the reader's limit of " +
               std::to_string(limits_.max_column_values) + " per column");
  }
  if (num_values == 0) return Status::Ok();  // a zero-row chunk: nothing to read
  ChunkReader reader(path_, c, limits_, codec, num_values, rows, out);
  return reader.ReadPages(reinterpret_cast<const uint8_t*>(bytes_.data()), start, end);
}

}  // namespace baton::parquet
