#include "trainer/parquet/parquet_file.h"

#include <cmath>
#include <cstring>

#include "schema/atomic_file.h"
#include "trainer/parquet/parquet_codec.h"
#include "trainer/parquet/rle_hybrid.h"

namespace baton::parquet {
namespace {

// Field ids of the parquet.thrift structs this reader uses.
namespace fmd {  // FileMetaData
constexpr int16_t kSchema = 2, kNumRows = 3, kRowGroups = 4, kEncryption = 8;
}
namespace se {  // SchemaElement
constexpr int16_t kType = 1, kRepetition = 3, kName = 4, kNumChildren = 5;
}
namespace cc {  // ColumnChunk, ColumnMetaData
constexpr int16_t kFilePath = 1, kMeta = 3, kCrypto = 8;
constexpr int16_t kCodec = 4, kNumValues = 5, kDataPageOffset = 9, kDictPageOffset = 11;
}  // namespace cc
namespace ph {  // PageHeader and its per-type headers
constexpr int16_t kType = 1, kUncompressed = 2, kCompressed = 3, kDataV1 = 5, kDict = 7,
                  kDataV2 = 8;
}
enum PageType { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };
enum Encoding { kPlain = 0, kPlainDictionary = 2, kRle = 3, kRleDictionary = 8 };
enum Repetition { kRequired = 0, kOptional = 1, kRepeated = 2 };

std::string EncodingName(int64_t e) {
  static const char* kNames[] = {
      "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
      "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
      "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  if (e >= 0 && e < 10) return kNames[e];
  return "encoding " + std::to_string(e);
}

size_t ValueBytes(PhysicalType t) {
  switch (t) {
    case PhysicalType::kInt32:
    case PhysicalType::kFloat:
      return 4;
    case PhysicalType::kInt64:
    case PhysicalType::kDouble:
      return 8;
    default:
      return 0;
  }
}

// PLAIN values of a supported type into doubles.
Status DecodePlain(PhysicalType t, const uint8_t* p, size_t n, int64_t count,
                   std::vector<double>* out) {
  const size_t w = ValueBytes(t);
  if (uint64_t(count) * w > n) {
    return Status::Data("PLAIN values: " + std::to_string(count) + " values need " +
                        std::to_string(uint64_t(count) * w) + " bytes, the page holds " +
                        std::to_string(n));
  }
  out->reserve(out->size() + size_t(count));
  for (int64_t k = 0; k < count; ++k, p += w) {
    switch (t) {
      case PhysicalType::kFloat: {
        float f;
        std::memcpy(&f, p, 4);
        out->push_back(f);
        break;
      }
      case PhysicalType::kDouble: {
        double d;
        std::memcpy(&d, p, 8);
        out->push_back(d);
        break;
      }
      case PhysicalType::kInt32: {
        int32_t i;
        std::memcpy(&i, p, 4);
        out->push_back(i);
        break;
      }
      default: {
        int64_t i;
        std::memcpy(&i, p, 8);
        if (i > (int64_t(1) << 53) || i < -(int64_t(1) << 53)) {
          return Status::Data("INT64 value " + std::to_string(i) +
                              " beyond 2^53 (this reader keeps values as doubles)");
        }
        out->push_back(double(i));
      }
    }
  }
  return Status::Ok();
}

uint32_t ReadU32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
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

Result<ParquetFile> ParquetFile::Open(const std::string& path) {
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return Status::Data(bytes.status().message());
  ParquetFile f;
  f.path_ = path;
  f.bytes_ = std::move(bytes).value();
  const std::string& b = f.bytes_;
  auto bad = [&](const std::string& why) { return Status::Data(path + ": " + why); };
  if (b.size() < 12 || b.compare(0, 4, "PAR1") != 0)
    return bad("not a parquet file (no PAR1 magic)");
  if (b.compare(b.size() - 4, 4, "PARE") == 0)
    return bad("an encrypted parquet file (not supported)");
  if (b.compare(b.size() - 4, 4, "PAR1") != 0) {
    return bad("truncated parquet file (no PAR1 magic at the end)");
  }
  const uint32_t footer_len = ReadU32(reinterpret_cast<const uint8_t*>(b.data()) + b.size() - 8);
  if (footer_len > b.size() - 12)
    return bad("footer length " + std::to_string(footer_len) + " beyond the file");
  const uint8_t* footer = reinterpret_cast<const uint8_t*>(b.data()) + b.size() - 8 - footer_len;
  size_t pos = 0;
  auto meta = ReadThriftStruct(footer, footer_len, &pos);
  if (!meta.ok()) return bad("corrupt footer: " + meta.status().message());
  f.meta_ = std::move(meta).value();
  if (f.meta_.Field(fmd::kEncryption)) return bad("an encrypted parquet file (not supported)");
  f.num_rows_ = f.meta_.Int(fmd::kNumRows, -1);
  const ThriftValue* schema = f.meta_.Field(fmd::kSchema);
  if (f.num_rows_ < 0 || !schema || schema->kind != ThriftValue::Kind::kList ||
      schema->list.empty()) {
    return bad("footer without num_rows or schema");
  }

  // The schema is a depth-first list of elements; element 0 is the root. Walk it with a stack of
  // (children left, def, rep, path) to find each leaf's levels.
  struct Frame {
    int64_t children_left;
    int def, rep;
    std::string path, top;
  };
  std::vector<Frame> stack{{schema->list[0].Int(se::kNumChildren, 0), 0, 0, "", ""}};
  for (size_t k = 1; k < schema->list.size(); ++k) {
    while (!stack.empty() && stack.back().children_left == 0) stack.pop_back();
    if (stack.empty()) return bad("schema has more elements than its root's children");
    Frame& parent = stack.back();
    --parent.children_left;
    const ThriftValue& el = schema->list[k];
    const ThriftValue* name = el.Field(se::kName);
    if (!name || name->kind != ThriftValue::Kind::kBinary)
      return bad("schema element without a name");
    const int64_t rep = el.Int(se::kRepetition, kRequired);
    Frame me{el.Int(se::kNumChildren, 0), parent.def + (rep != kRequired ? 1 : 0),
             parent.rep + (rep == kRepeated ? 1 : 0),
             parent.path.empty() ? name->bin : parent.path + "." + name->bin,
             parent.top.empty() ? name->bin : parent.top};
    if (me.children_left > 0) {
      stack.push_back(me);
      continue;
    }
    ColumnDesc c;
    c.name = me.top;
    c.path = me.path;
    c.type = PhysicalType(el.Int(se::kType, -1));
    c.leaf_index = int(f.columns_.size());
    c.max_def = me.def;
    c.max_rep = me.rep;
    f.columns_.push_back(c);
  }
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
  if (ValueBytes(c.type) == 0) {
    return bad(std::string("physical type ") + PhysicalTypeName(c.type) +
               " is not supported (this reader handles FLOAT, DOUBLE, INT32 and INT64)");
  }
  if (c.max_rep > 1) return bad("nested lists are not supported");
  ColumnData out;
  out.desc = c;
  const ThriftValue* groups = meta_.Field(fmd::kRowGroups);
  if (groups && groups->kind == ThriftValue::Kind::kList) {
    for (const auto& g : groups->list) {
      const ThriftValue* cols = g.Field(1);
      if (!cols || cols->kind != ThriftValue::Kind::kList ||
          cols->list.size() <= size_t(c.leaf_index)) {
        return bad("a row group without this column");
      }
      BATON_RETURN_IF_ERROR(ReadChunk(c, cols->list[size_t(c.leaf_index)], &out));
    }
  }
  out.offsets.push_back(int64_t(out.values.size()));
  if (out.rows() != num_rows_) {
    return bad("holds " + std::to_string(out.rows()) + " rows, the footer says " +
               std::to_string(num_rows_));
  }
  return out;
}

Status ParquetFile::ReadChunk(const ColumnDesc& c, const ThriftValue& chunk,
                              ColumnData* out) const {
  auto bad = [&](const std::string& why) {
    return Status::Data(path_ + ": column '" + c.path + "': " + why);
  };
  if (chunk.Field(cc::kFilePath)) return bad("column data in another file (not supported)");
  if (chunk.Field(cc::kCrypto)) return bad("an encrypted column (not supported)");
  const ThriftValue* md = chunk.Field(cc::kMeta);
  if (!md) return bad("column chunk without metadata");
  const int64_t codec = md->Int(cc::kCodec, 0);
  const int64_t num_values = md->Int(cc::kNumValues, -1);
  int64_t start = md->Int(cc::kDataPageOffset, -1);
  const int64_t dict_off = md->Int(cc::kDictPageOffset, -1);
  if (dict_off > 0 && dict_off < start) start = dict_off;
  if (num_values < 0 || start < 4 || size_t(start) >= bytes_.size()) {
    return bad("column chunk with bad offsets");
  }
  const auto* data = reinterpret_cast<const uint8_t*>(bytes_.data());
  const size_t end = bytes_.size() - 8;
  size_t pos = size_t(start);
  std::vector<double> dict;
  bool have_dict = false;
  int64_t seen = 0;
  std::string page;
  std::vector<uint32_t> rep, def, idx;
  while (seen < num_values) {
    if (pos >= end)
      return bad("pages end before the chunk's " + std::to_string(num_values) + " values");
    auto hdr_r = ReadThriftStruct(data, end, &pos);
    if (!hdr_r.ok()) return bad("corrupt page header: " + hdr_r.status().message());
    const ThriftValue& hdr = hdr_r.value();
    const int64_t type = hdr.Int(ph::kType, -1);
    const int64_t csize = hdr.Int(ph::kCompressed, -1);
    const int64_t usize = hdr.Int(ph::kUncompressed, -1);
    if (csize < 0 || usize < 0 || size_t(csize) > end - pos)
      return bad("page sizes beyond the file");
    const uint8_t* body = data + pos;
    pos += size_t(csize);

    if (type == kIndexPage) continue;
    if (type == kDictionaryPage) {
      const ThriftValue* dh = hdr.Field(ph::kDict);
      if (!dh) return bad("dictionary page without its header");
      const int64_t enc = dh->Int(2, kPlain);
      if (enc != kPlain && enc != kPlainDictionary) {
        return bad("dictionary page encoding " + EncodingName(enc) + " is not supported");
      }
      const Status st = Decompress(codec, body, size_t(csize), size_t(usize), &page);
      if (!st.ok()) return bad(st.message());
      dict.clear();
      const Status pst = DecodePlain(c.type, reinterpret_cast<const uint8_t*>(page.data()),
                                     page.size(), dh->Int(1, 0), &dict);
      if (!pst.ok()) return bad("dictionary page: " + pst.message());
      have_dict = true;
      continue;
    }
    if (type != kDataPage && type != kDataPageV2) {
      return bad("page type " + std::to_string(type) + " is not supported");
    }

    // Levels, then the values' bytes, laid out differently by the two data page versions.
    int64_t n = 0, encoding = 0;
    const uint8_t* values = nullptr;
    size_t values_len = 0;
    const int rep_bits = BitWidth(c.max_rep), def_bits = BitWidth(c.max_def);
    if (type == kDataPage) {
      const ThriftValue* dh = hdr.Field(ph::kDataV1);
      if (!dh) return bad("data page without its header");
      n = dh->Int(1, -1);
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
      const ThriftValue* dh = hdr.Field(ph::kDataV2);
      if (!dh) return bad("data page v2 without its header");
      n = dh->Int(1, -1);
      encoding = dh->Int(4, -1);
      const int64_t def_len = dh->Int(5, 0), rep_len = dh->Int(6, 0);
      const bool compressed = dh->Int(7, 1) != 0;
      if (def_len < 0 || rep_len < 0 || def_len + rep_len > csize || def_len + rep_len > usize) {
        return bad("data page v2 level lengths beyond the page");
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
      if (compressed) {
        st = Decompress(codec, rest, rest_c, rest_u, &page);
        if (!st.ok()) return bad(st.message());
        values = reinterpret_cast<const uint8_t*>(page.data());
        values_len = page.size();
      } else {
        values = rest;
        values_len = rest_c;
      }
    }
    if (n < 0 || n > num_values - seen) return bad("page value count beyond the chunk's");

    int64_t present = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (int(def[size_t(k)]) == c.max_def) {
        ++present;
      } else {
        return bad("null or empty-list entries (definition level " +
                   std::to_string(def[size_t(k)]) + " of " + std::to_string(c.max_def) +
                   ") are not supported");
      }
    }
    const size_t before = out->values.size();
    if (encoding == kPlain) {
      const Status st = DecodePlain(c.type, values, values_len, present, &out->values);
      if (!st.ok()) return bad(st.message());
    } else if (encoding == kRleDictionary || encoding == kPlainDictionary) {
      if (!have_dict) return bad("dictionary-encoded page without a dictionary page");
      if (values_len < 1) return bad("dictionary indices missing");
      const Status st = DecodeRleHybrid(values + 1, values_len - 1, values[0], present, &idx);
      if (!st.ok()) return bad("dictionary indices: " + st.message());
      for (uint32_t i : idx) {
        if (i >= dict.size()) return bad("dictionary index " + std::to_string(i) + " out of range");
        out->values.push_back(dict[i]);
      }
    } else {
      return bad("value encoding " + EncodingName(encoding) +
                 " is not supported (this reader handles PLAIN and RLE_DICTIONARY)");
    }
    // Rows: a repetition level of 0 starts a new row (every entry holds a value, checked above).
    for (int64_t k = 0; k < n; ++k) {
      if (rep[size_t(k)] == 0) out->offsets.push_back(int64_t(before) + k);
    }
    seen += n;
  }
  return Status::Ok();
}

}  // namespace baton::parquet
