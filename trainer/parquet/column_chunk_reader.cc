// ParquetFile::ReadChunk: one column chunk's pages (dictionary, data v1 and v2) checked,
// decompressed and decoded into a ColumnData; the rest of the reader is parquet_file.cc.
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
  const auto* data = reinterpret_cast<const uint8_t*>(bytes_.data());
  const int rep_bits = BitWidth(c.max_rep), def_bits = BitWidth(c.max_def);
  const ValueType vt{c.type, c.is_unsigned, c.scale};
  size_t pos = start;
  std::vector<double> dict;
  bool have_dict = false;
  int64_t seen = 0, rows_seen = 0;
  std::string page;
  std::vector<uint32_t> rep, def, idx;
  while (pos < end) {
    auto hdr_r = ReadThriftStruct(data, end, &pos);
    if (!hdr_r.ok()) return bad("corrupt page header: " + hdr_r.status().message());
    const ThriftValue& hdr = hdr_r.value();
    const int64_t type = hdr.Int(ph::kType, -1);
    const int64_t csize = hdr.Int(ph::kCompressed, -1);
    const int64_t usize = hdr.Int(ph::kUncompressed, -1);
    if (csize < 0 || usize < 0 || uint64_t(csize) > end - pos) {
      return bad("a page of " + std::to_string(csize) + " bytes past the end of its chunk (" +
                 std::to_string(end - pos) + " bytes left)");
    }
    if (uint64_t(usize) > limits_.max_page_bytes) {
      return bad("a page of " + std::to_string(usize) +
                 " uncompressed bytes, above the reader's limit of " +
                 std::to_string(limits_.max_page_bytes));
    }
    const uint8_t* body = data + pos;
    pos += size_t(csize);
    if (const ThriftValue* crc = hdr.Field(ph::kCrc); crc && crc->kind == ThriftValue::Kind::kInt) {
      const uint32_t want = uint32_t(crc->i), got = uint32_t(crc32_z(0, body, size_t(csize)));
      if (want != got) {
        return bad("page CRC mismatch (the file says " + std::to_string(want) + ", the page's " +
                   std::to_string(csize) + " bytes give " + std::to_string(got) +
                   "): a corrupt page");
      }
    }

    if (type == kIndexPage) continue;
    if (type == kDictionaryPage) {
      const ThriftValue* dh = hdr.Field(ph::kDict);
      if (!dh) return bad("dictionary page without its header");
      if (have_dict || seen > 0) return bad("a dictionary page after the chunk's first page");
      const int64_t enc = dh->Int(2, kPlain);
      if (enc != kPlain && enc != kPlainDictionary) {
        return bad("dictionary page encoding " + EncodingName(enc) + " is not supported");
      }
      const int64_t nd = dh->Int(1, -1);
      if (nd < 0 || uint64_t(nd) > uint64_t(usize) / ValueBytes(c.type)) {
        return bad("a dictionary of " + std::to_string(nd) + " values in a page of " +
                   std::to_string(usize) + " bytes");
      }
      const Status st = Decompress(codec, body, size_t(csize), size_t(usize), &page);
      if (!st.ok()) return bad(st.message());
      const Status pst =
          DecodePlain(vt, reinterpret_cast<const uint8_t*>(page.data()), page.size(), nd, &dict);
      if (!pst.ok()) return bad("dictionary page: " + pst.message());
      have_dict = true;
      continue;
    }
    if (type != kDataPage && type != kDataPageV2) {
      return bad("page type " + std::to_string(type) + " is not supported");
    }

    // Levels, then the values' bytes, laid out differently by the two data page versions.
    const ThriftValue* dh = hdr.Field(type == kDataPage ? ph::kDataV1 : ph::kDataV2);
    if (!dh) return bad("data page without its header");
    const int64_t n = dh->Int(1, -1);
    if (n < 0 || n > num_values - seen) {
      return bad("a page of " + std::to_string(n) + " values, the chunk has " +
                 std::to_string(num_values - seen) + " left of its " + std::to_string(num_values));
    }
    // Levels and values take 16 bytes an entry once decoded.
    if (uint64_t(n) > limits_.max_page_bytes / 16) {
      return bad("a page of " + std::to_string(n) + " values, above the reader's limit of " +
                 std::to_string(limits_.max_page_bytes / 16));
    }
    int64_t encoding = 0, page_rows = -1;
    const uint8_t* values = nullptr;
    size_t values_len = 0;
    if (type == kDataPage) {
      encoding = dh->Int(2, -1);
      const Status st = Decompress(codec, body, size_t(csize), size_t(usize), &page);
      if (!st.ok()) return bad(st.message());
      const auto* p = reinterpret_cast<const uint8_t*>(page.data());
      size_t at = 0;
      auto levels = [&](int max, int bits, int64_t enc, std::vector<uint32_t>* lv) -> Status {
        if (max == 0) {
          lv->assign(size_t(n), 0);
          return Status::Ok();
        }
        if (enc != kRle) {
          return Status::Data("level encoding " + EncodingName(enc) +
                              " is not supported (RLE only)");
        }
        if (page.size() - at < 4) return Status::Data("levels past the end of the page");
        const uint32_t len = ReadU32(p + at);
        at += 4;
        if (len > page.size() - at) return Status::Data("levels past the end of the page");
        BATON_RETURN_IF_ERROR(DecodeRleHybrid(p + at, len, bits, n, lv));
        at += len;
        return Status::Ok();
      };
      Status st2 = levels(c.max_rep, rep_bits, dh->Int(4, kRle), &rep);
      if (st2.ok()) st2 = levels(c.max_def, def_bits, dh->Int(3, kRle), &def);
      if (!st2.ok()) return bad(st2.message());
      values = p + at;
      values_len = page.size() - at;
    } else {
      encoding = dh->Int(4, -1);
      page_rows = dh->Int(3, -1);
      if (dh->Int(2, 0) != 0) {
        return bad("null entries (" + std::to_string(dh->Int(2, 0)) +
                   " in a page) are not supported");
      }
      const int64_t def_len = dh->Int(5, 0), rep_len = dh->Int(6, 0);
      const bool compressed = dh->Int(7, 1) != 0;
      // Each length is checked on its own before they are added, so the sum cannot wrap.
      if (def_len < 0 || rep_len < 0 || def_len > csize || rep_len > csize - def_len ||
          def_len + rep_len > usize) {
        return bad("data page v2 level lengths " + std::to_string(rep_len) + " + " +
                   std::to_string(def_len) + " beyond the page's " + std::to_string(csize) +
                   " bytes");
      }
      Status st = Status::Ok();
      if (c.max_rep > 0)
        st = DecodeRleHybrid(body, size_t(rep_len), rep_bits, n, &rep);
      else
        rep.assign(size_t(n), 0);
      if (st.ok() && c.max_def > 0) {
        st = DecodeRleHybrid(body + rep_len, size_t(def_len), def_bits, n, &def);
      } else if (st.ok()) {
        def.assign(size_t(n), 0);
      }
      if (!st.ok()) return bad(st.message());
      const uint8_t* rest = body + rep_len + def_len;
      const size_t rest_c = size_t(csize - rep_len - def_len);
      const size_t rest_u = size_t(usize - rep_len - def_len);
      if (rest_u == 0) {
        values_len = 0;  // no values section: a codec is not asked to inflate nothing
      } else if (compressed) {
        st = Decompress(codec, rest, rest_c, rest_u, &page);
        if (!st.ok()) return bad(st.message());
        values = reinterpret_cast<const uint8_t*>(page.data());
        values_len = page.size();
      } else {
        if (rest_c != rest_u) {
          return bad("an uncompressed v2 values section of " + std::to_string(rest_c) +
                     " bytes, its header says " + std::to_string(rest_u));
        }
        values = rest;
        values_len = rest_c;
      }
    }

    // Every entry must hold a value (nulls are refused) and every page start a row.
    int64_t new_rows = 0;
    for (int64_t k = 0; k < n; ++k) {
      const uint32_t d = def[size_t(k)], r = rep[size_t(k)];
      if (d != uint32_t(c.max_def)) {
        if (d > uint32_t(c.max_def)) {
          return bad("definition level " + std::to_string(d) + " above the column's maximum " +
                     std::to_string(c.max_def));
        }
        return bad("null or empty-list entries (definition level " + std::to_string(d) + " of " +
                   std::to_string(c.max_def) + ") are not supported");
      }
      if (r > uint32_t(c.max_rep)) {
        return bad("repetition level " + std::to_string(r) + " above the column's maximum " +
                   std::to_string(c.max_rep));
      }
      if (k == 0 && r != 0) {
        return bad("a page that starts inside a row (first repetition level " + std::to_string(r) +
                   ", not 0)");
      }
      if (r == 0) ++new_rows;
    }
    if (page_rows >= 0 && page_rows != new_rows) {
      return bad("a data page v2 of " + std::to_string(page_rows) + " rows whose levels hold " +
                 std::to_string(new_rows));
    }
    if (new_rows > rows - rows_seen) {
      return bad("pages hold more rows than the row group's " + std::to_string(rows));
    }
    const size_t before = out->values.size();
    Status st = Status::Ok();
    switch (encoding) {
      case kPlain:
        st = DecodePlain(vt, values, values_len, n, &out->values);
        break;
      case kByteStreamSplit:
        st = DecodeByteStreamSplit(vt, values, values_len, n, &out->values);
        break;
      case kDeltaBinaryPacked:
        st = DecodeDeltaBinaryPacked(vt, values, values_len, n, &out->values);
        break;
      case kRleDictionary:
      case kPlainDictionary: {
        if (!have_dict) return bad("dictionary-encoded page without a dictionary page");
        if (n == 0) break;
        if (values_len < 1) return bad("dictionary indices missing");
        // Writers size the indices to the dictionary; narrower ones cannot address it, and
        // reading them would repeat its first entries.
        if (dict.size() > 1 && values[0] < BitWidth(int64_t(dict.size()) - 1)) {
          return bad("dictionary indices of bit width " + std::to_string(values[0]) +
                     " cannot address a dictionary of " + std::to_string(dict.size()) + " values");
        }
        st = DecodeRleHybrid(values + 1, values_len - 1, values[0], n, &idx);
        if (!st.ok()) return bad("dictionary indices: " + st.message());
        for (uint32_t i : idx) {
          if (i >= dict.size()) {
            return bad("dictionary index " + std::to_string(i) +
                       " out of range (the dictionary "
                       "holds " +
                       std::to_string(dict.size()) + ")");
          }
          out->values.push_back(dict[i]);
        }
        break;
      }
      default:
        return bad("value encoding " + EncodingName(encoding) +
                   " is not supported (this reader handles PLAIN, RLE_DICTIONARY, "
                   "BYTE_STREAM_SPLIT and DELTA_BINARY_PACKED)");
    }
    if (!st.ok()) return bad(st.message());
    // Rows: a repetition level of 0 starts a new row (every entry holds a value, checked above).
    for (int64_t k = 0; k < n; ++k) {
      if (rep[size_t(k)] == 0) out->offsets.push_back(int64_t(before) + k);
    }
    seen += n;
    rows_seen += new_rows;
  }
  if (seen != num_values || rows_seen != rows) {
    return bad("the chunk's pages hold " + std::to_string(seen) + " values in " +
               std::to_string(rows_seen) + " rows, its metadata says " +
               std::to_string(num_values) + " values in " + std::to_string(rows) + " rows");
  }
  return Status::Ok();
}

}  // namespace baton::parquet
