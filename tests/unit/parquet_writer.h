// A minimal parquet writer for the reader's tests: a Thrift compact encoder and a builder that
// lays out pages, column chunks and the footer from a spec, so that each test states the one
// field it breaks. Only what the tests need; it checks nothing (broken files are its purpose).
#pragma once

// Specs are aggregates initialised in part, their other fields left at the defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace baton::parquet::testing {

// Thrift compact protocol, field by field (the reader accepts any integer wire type).
class Thrift {
 public:
  void I(int16_t id, int64_t v) {
    Header(id, 6);
    Zz(v);
  }
  void Bin(int16_t id, const std::string& s) {
    Header(id, 8);
    Uv(s.size());
    out += s;
  }
  void Bool(int16_t id, bool b) { Header(id, b ? 1 : 2); }
  void Begin(int16_t id) {
    Header(id, 12);
    last_.push_back(0);
  }
  void End() {
    out += '\0';
    last_.pop_back();
  }
  // A list header; struct elements follow as BeginElem() ... End().
  void List(int16_t id, uint8_t elem, uint64_t n) {
    Header(id, 9);
    ListHead(elem, n);
  }
  void ListHead(uint8_t elem, uint64_t n) {
    if (n < 15) {
      out += char(n << 4 | elem);
    } else {
      out += char(0xf0 | elem);
      Uv(n);
    }
  }
  void BeginElem() { last_.push_back(0); }
  // A struct field whose bytes (fields and stop byte) are already encoded.
  void Struct(int16_t id, const std::string& encoded) {
    Header(id, 12);
    out += encoded;
  }
  void Uv(uint64_t v) {
    while (v >= 0x80) {
      out += char(v | 0x80);
      v >>= 7;
    }
    out += char(v);
  }
  void Zz(int64_t v) { Uv((uint64_t(v) << 1) ^ uint64_t(v >> 63)); }
  std::string out;

 private:
  void Header(int16_t id, uint8_t type) {
    int16_t& last = last_.back();
    if (id > last && id - last <= 15) {
      out += char((id - last) << 4 | type);
    } else {
      out += char(type);
      Zz(id);
    }
    last = id;
  }
  std::vector<int16_t> last_{0};
};

template <class T>
std::string Plain(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// One RLE run of `count` x `value` at `bit_width`.
inline std::string RleRun(uint32_t value, uint64_t count, int bit_width) {
  Thrift t;
  t.Uv(count << 1);
  for (int k = 0; k < (bit_width + 7) / 8; ++k) t.out += char(value >> (8 * k));
  return t.out;
}

// Bit-packed groups of 8 (the list is padded with zeros to a multiple of 8).
inline std::string BitPacked(std::vector<uint32_t> v, int bit_width) {
  while (v.size() % 8) v.push_back(0);
  Thrift t;
  t.Uv((v.size() / 8) << 1 | 1);
  std::string bits(v.size() * size_t(bit_width) / 8, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    for (int k = 0; k < bit_width; ++k) {
      const size_t bit = i * size_t(bit_width) + size_t(k);
      if (v[i] >> k & 1) bits[bit / 8] = char(bits[bit / 8] | (1 << (bit % 8)));
    }
  }
  return t.out + bits;
}

// v1 levels: a 4-byte length, then the RLE / bit-packed runs.
inline std::string V1Levels(const std::string& runs) {
  const uint32_t n = uint32_t(runs.size());
  return std::string(reinterpret_cast<const char*>(&n), 4) + runs;
}

struct PageSpec {
  int type = 0;  // 0 data page v1, 2 dictionary page, 3 data page v2
  int64_t num_values = 0;
  int encoding = 0;                                           // PLAIN
  std::string body;                                           // the page's bytes as stored
  std::optional<int64_t> uncompressed_size, compressed_size;  // default body.size()
  std::optional<int64_t> crc;                                 // written when set
  // Data page v2 only.
  int64_t rep_len = 0, def_len = 0, num_rows = -1, num_nulls = 0;
  bool v2_compressed = true;
};

struct ChunkSpec {
  std::vector<PageSpec> pages;
  int codec = 0;
  std::optional<int64_t> num_values;        // default: the data pages' sum
  std::optional<int64_t> total_compressed;  // default: the pages' bytes
  std::optional<int64_t> type;              // default: the column's
  std::optional<int64_t> data_page_offset;  // default: where its first data page lies
  bool encrypted = false;
};

struct ColumnSpec {
  std::string name;
  int type = 4;       // FLOAT
  bool list = false;  // name.list.element under a LIST group
  std::optional<int64_t> converted, scale, precision;
  std::string logical;  // a LogicalType union, Thrift-encoded (with its stop byte), when set
};

struct RowGroupSpec {
  int64_t num_rows = 0;
  std::vector<ChunkSpec> chunks;  // one per column
};

struct FileSpec {
  std::vector<ColumnSpec> columns;
  std::vector<RowGroupSpec> groups;
  std::optional<int64_t> num_rows;  // default: the groups' sum
  bool encrypted_footer_field = false;
};

inline std::string PageBytes(const PageSpec& p) {
  Thrift h;
  h.I(1, p.type);
  h.I(2, p.uncompressed_size.value_or(int64_t(p.body.size())));
  h.I(3, p.compressed_size.value_or(int64_t(p.body.size())));
  if (p.crc) h.I(4, *p.crc);
  if (p.type == 0) {
    h.Begin(5);
    h.I(1, p.num_values);
    h.I(2, p.encoding);
    h.I(3, 3);
    h.I(4, 3);
    h.End();
  } else if (p.type == 2) {
    h.Begin(7);
    h.I(1, p.num_values);
    h.I(2, p.encoding);
    h.End();
  } else if (p.type == 3) {
    h.Begin(8);
    h.I(1, p.num_values);
    h.I(2, p.num_nulls);
    h.I(3, p.num_rows);
    h.I(4, p.encoding);
    h.I(5, p.def_len);
    h.I(6, p.rep_len);
    h.Bool(7, p.v2_compressed);
    h.End();
  }
  h.out += '\0';
  return h.out + p.body;
}

inline std::string Build(const FileSpec& f) {
  std::string file = "PAR1";
  struct Placed {
    int64_t offset, bytes, num_values;
  };
  std::vector<std::vector<Placed>> placed;
  int64_t rows = 0;
  for (const auto& g : f.groups) {
    rows += g.num_rows;
    placed.emplace_back();
    for (const auto& c : g.chunks) {
      const int64_t off = int64_t(file.size());
      int64_t values = 0;
      for (const auto& p : c.pages) {
        file += PageBytes(p);
        if (p.type != 2) values += p.num_values;
      }
      placed.back().push_back({off, int64_t(file.size()) - off, values});
    }
  }
  Thrift m;
  m.I(1, 1);
  size_t elements = 1;
  for (const auto& c : f.columns) elements += c.list ? 3 : 1;
  m.List(2, 12, elements);
  m.BeginElem();
  m.Bin(4, "schema");
  m.I(5, int64_t(f.columns.size()));
  m.End();
  for (const auto& c : f.columns) {
    if (c.list) {
      m.BeginElem();
      m.I(3, 0);
      m.Bin(4, c.name);
      m.I(5, 1);
      m.I(6, 3);  // LIST
      m.End();
      m.BeginElem();
      m.I(3, 2);
      m.Bin(4, "list");
      m.I(5, 1);
      m.End();
    }
    m.BeginElem();
    m.I(1, c.type);
    m.I(3, 0);
    m.Bin(4, c.list ? "element" : c.name);
    if (c.converted) m.I(6, *c.converted);
    if (c.scale) m.I(7, *c.scale);
    if (c.precision) m.I(8, *c.precision);
    if (!c.logical.empty()) m.Struct(10, c.logical);
    m.End();
  }
  m.I(3, f.num_rows.value_or(rows));
  m.List(4, 12, f.groups.size());
  for (size_t g = 0; g < f.groups.size(); ++g) {
    m.BeginElem();
    m.List(1, 12, f.groups[g].chunks.size());
    for (size_t k = 0; k < f.groups[g].chunks.size(); ++k) {
      const ChunkSpec& c = f.groups[g].chunks[k];
      const Placed& pl = placed[g][k];
      m.BeginElem();
      m.I(2, pl.offset);
      m.Begin(3);
      m.I(1, c.type.value_or(f.columns[k].type));
      m.I(4, c.codec);
      m.I(5, c.num_values.value_or(pl.num_values));
      m.I(6, pl.bytes);
      m.I(7, c.total_compressed.value_or(pl.bytes));
      int64_t data = pl.offset, dict = -1;
      if (!c.pages.empty() && c.pages[0].type == 2) {
        dict = pl.offset;
        data = pl.offset + int64_t(PageBytes(c.pages[0]).size());
      }
      m.I(9, c.data_page_offset.value_or(data));
      if (dict >= 0) m.I(11, dict);
      m.End();
      if (c.encrypted) {
        m.Begin(8);
        m.Begin(1);
        m.End();
        m.End();
      }
      m.End();
    }
    m.I(2, 0);
    m.I(3, f.groups[g].num_rows);
    m.End();
  }
  if (f.encrypted_footer_field) {
    m.Begin(8);
    m.Begin(1);
    m.End();
    m.End();
  }
  m.out += '\0';
  file += m.out;
  const uint32_t n = uint32_t(m.out.size());
  file.append(reinterpret_cast<const char*>(&n), 4);
  file += "PAR1";
  return file;
}

// A required FLOAT column "x" in one row group of one PLAIN v1 page.
inline FileSpec FloatFile(const std::vector<float>& v) {
  PageSpec p;
  p.num_values = int64_t(v.size());
  p.body = Plain(v);
  FileSpec f;
  f.columns = {{"x", 4}};
  f.groups = {{int64_t(v.size()), {{{p}}}}};
  return f;
}

// A LIST<FLOAT> column "a" (required element): rows of `width` values in one v1 page, with the
// given repetition levels (default: a new row every `width` entries).
inline FileSpec ListFile(const std::vector<float>& v, int64_t width,
                         std::vector<uint32_t> rep = {}) {
  if (rep.empty()) {
    for (size_t i = 0; i < v.size(); ++i) rep.push_back(i % size_t(width) == 0 ? 0 : 1);
  }
  PageSpec p;
  p.num_values = int64_t(v.size());
  p.body = V1Levels(BitPacked(rep, 1)) + V1Levels(RleRun(1, v.size(), 1)) + Plain(v);
  int64_t rows = 0;
  for (uint32_t r : rep) rows += r == 0;
  FileSpec f;
  ColumnSpec c{"a", 4, true};
  f.columns = {c};
  f.groups = {{rows, {{{p}}}}};
  return f;
}

}  // namespace baton::parquet::testing
