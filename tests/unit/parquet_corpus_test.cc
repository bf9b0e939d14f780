// apache/parquet-testing as a test suite: every file pinned in tests/data/parquet-testing/ has a
// verdict here, read (and its values checked where the corpus or its README states them) or
// refused with a named error. A file without a verdict fails the test, and so does a bad_data/
// file that reads, except the one noted below.
#include <dirent.h>

// Specs are aggregates initialised in part, their other fields left at the defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "trainer/parquet/parquet_file.h"

namespace baton::parquet {
namespace {

const std::string kCorpus = std::string(BATON_SOURCE_DIR) + "/tests/data/parquet-testing/";

using Check = std::function<void(const ParquetFile&)>;

struct Verdict {
  // Empty: every column in `reads` reads (the others are refused with a named error). Else
  // the file is refused: Open, or reading one of its columns, fails with this text.
  std::string refused;
  std::vector<std::string> reads;
  Check check;
};

std::vector<double> Col(const ParquetFile& f, const std::string& name) {
  auto c = f.ReadColumn(name);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? c->values : std::vector<double>{};
}

std::vector<double> Iota(double from, int n) {
  std::vector<double> v;
  for (int k = 0; k < n; ++k) v.push_back(from + k);
  return v;
}

// The corpus's *_expect.csv: column name -> values of the integer columns.
std::map<std::string, std::vector<std::string>> Csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> names;
  std::stringstream hs(line);
  for (std::string h; std::getline(hs, h, ',');) {
    if (h.size() >= 2 && h.front() == '"') h = h.substr(1, h.size() - 2);
    names.push_back(h);
  }
  std::map<std::string, std::vector<std::string>> out;
  while (std::getline(in, line)) {
    std::stringstream ls(line);
    size_t k = 0;
    for (std::string v; std::getline(ls, v, ',') && k < names.size(); ++k) {
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      out[names[k]].push_back(v);
    }
  }
  return out;
}

// Every column of `f` that reads equals the CSV's column of the same name, exactly.
void MatchCsv(const ParquetFile& f, const std::string& csv, size_t expect_read) {
  const auto expected = Csv(kCorpus + csv);
  size_t read = 0;
  for (const auto& c : f.columns()) {
    auto r = f.ReadColumn(c.path);
    if (!r.ok()) continue;
    ++read;
    const auto& want = expected.at(c.path);
    ASSERT_EQ(r->values.size(), want.size()) << c.path;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(r->values[i], double(std::stoll(want[i]))) << c.path << " row " << i;
    }
  }
  EXPECT_EQ(read, expect_read);
}

const std::vector<double> kLz4C0 = {1593604800, 1593604800, 1593604801, 1593604801};
const std::vector<double> kLz4V11 = {42, 7.7, 42.125, 7.7};
const std::vector<std::string> kAllTypes = {"id",         "tinyint_col", "smallint_col", "int_col",
                                            "bigint_col", "float_col",   "double_col"};

std::map<std::string, Verdict> Verdicts() {
  const std::string nulls = "null or empty-list entries";
  return {
      // bad_data/: each refused, by the check that meets its defect first.
      {"bad_data/ARROW-GH-41317.parquet", {nulls}},  // its columns hold nulls before the defect
      {"bad_data/ARROW-GH-41321.parquet", {"column 'int64': level/index runs end early"}},
      // A dictionary of one value with indices of bit width 0: well formed, and read as the 21186
      // zeros pyarrow, parquet-java and DuckDB read. The one bad_data/ file that reads.
      {"bad_data/ARROW-GH-43605.parquet",
       {"",
        {"min_fl"},
        [](const ParquetFile& f) {
          EXPECT_EQ(Col(f, "min_fl"), std::vector<double>(21186, 0.0));
        }}},
      {"bad_data/ARROW-GH-45185.parquet", {"a page that starts inside a row"}},
      {"bad_data/ARROW-GH-47662.parquet", {"physical type FIXED_LEN_BYTE_ARRAY is not supported"}},
      {"bad_data/ARROW-RS-GH-6229-DICTHEADER.parquet", {"outside the file's data"}},
      {"bad_data/ARROW-RS-GH-6229-LEVELS.parquet", {"logical type UNKNOWN is not supported"}},
      {"bad_data/PARQUET-1481.parquet", {"unknown physical type"}},
      // data/ in scope: values from the corpus's README, its expect files, or twins.
      {"data/alltypes_plain.parquet",
       {"", kAllTypes,
        [](const ParquetFile& f) {
          EXPECT_EQ(Col(f, "id"), (std::vector<double>{4, 5, 6, 7, 2, 3, 0, 1}));
          EXPECT_EQ(Col(f, "bigint_col"), (std::vector<double>{0, 10, 0, 10, 0, 10, 0, 10}));
          EXPECT_EQ(Col(f, "float_col")[1], double(1.1f));
          EXPECT_EQ(Col(f, "double_col")[1], 10.1);
        }}},
      {"data/alltypes_plain.snappy.parquet",
       {"", kAllTypes,
        [](const ParquetFile& f) {
          EXPECT_EQ(Col(f, "id"), (std::vector<double>{6, 7}));
        }}},
      {"data/alltypes_dictionary.parquet",
       {"", kAllTypes,
        [](const ParquetFile& f) {
          EXPECT_EQ(Col(f, "id"), (std::vector<double>{0, 1}));
        }}},
      {"data/datapage_v1-uncompressed-checksum.parquet",
       {"",
        {"a", "b"},
        [](const ParquetFile& f) {
          auto twin =
              ParquetFile::Open(kCorpus + "data/datapage_v1-snappy-compressed-checksum.parquet");
          ASSERT_TRUE(twin.ok());
          EXPECT_EQ(Col(f, "a"), Col(*twin, "a"));
          EXPECT_EQ(Col(f, "b"), Col(*twin, "b"));
          EXPECT_EQ(Col(f, "a").size(), 5120u);
        }}},
      {"data/datapage_v1-snappy-compressed-checksum.parquet", {"", {"a", "b"}}},
      // arrow-rs reads the two corrupt-CRC files (it verifies CRCs only when asked): a CRC that
      // does not match is a corrupt page here, never values.
      {"data/datapage_v1-corrupt-checksum.parquet", {"page CRC mismatch"}},
      {"data/plain-dict-uncompressed-checksum.parquet",
       {"",
        {"long_field"},
        [](const ParquetFile& f) {
          auto twin = ParquetFile::Open(kCorpus + "data/rle-dict-snappy-checksum.parquet");
          ASSERT_TRUE(twin.ok());
          EXPECT_EQ(Col(f, "long_field"), Col(*twin, "long_field"));
        }}},
      {"data/rle-dict-snappy-checksum.parquet", {"", {"long_field"}}},
      {"data/rle-dict-uncompressed-corrupt-checksum.parquet", {"page CRC mismatch"}},
      {"data/int32_decimal.parquet",  // DECIMAL(4,2): 1.00 .. 24.00
       {"", {"value"}, [](const ParquetFile& f) { EXPECT_EQ(Col(f, "value"), Iota(1, 24)); }}},
      {"data/int64_decimal.parquet",  // DECIMAL(10,2): 1.00 .. 24.00
       {"", {"value"}, [](const ParquetFile& f) { EXPECT_EQ(Col(f, "value"), Iota(1, 24)); }}},
      {"data/byte_stream_split.zstd.parquet",
       {"", {"f32", "f64"}, [](const ParquetFile& f) { EXPECT_EQ(Col(f, "f64").size(), 300u); }}},
      {"data/byte_stream_split_extended.gzip.parquet",  // each type twice: PLAIN and BSS
       {"",
        {"float_plain", "float_byte_stream_split", "double_plain", "double_byte_stream_split",
         "int32_plain", "int32_byte_stream_split", "int64_plain", "int64_byte_stream_split"},
        [](const ParquetFile& f) {
          for (const char* t : {"float", "double", "int32", "int64"}) {
            const auto plain = Col(f, std::string(t) + "_plain");
            EXPECT_EQ(plain.size(), 200u);
            EXPECT_EQ(plain, Col(f, std::string(t) + "_byte_stream_split")) << t;
          }
        }}},
      {"data/delta_binary_packed.parquet",  // INT64 columns beyond 2^53 refused by name
       {"",
        {"bitwidth1", "bitwidth32"},
        [](const ParquetFile& f) { MatchCsv(f, "data/delta_binary_packed_expect.csv", 51); }}},
      {"data/delta_binary_packed_expect.csv", {"", {}, nullptr}},
      {"data/delta_encoding_required_column.parquet",
       {"",
        {"c_customer_sk:", "c_birth_year:"},
        [](const ParquetFile& f) {
          // The parquet's column names end in ':', the CSV's do not.
          const auto expected = Csv(kCorpus + "data/delta_encoding_required_column_expect.csv");
          for (const char* name : {"c_customer_sk", "c_birth_year", "c_current_addr_sk"}) {
            const auto got = Col(f, std::string(name) + ":");
            const auto& want = expected.at(name);
            ASSERT_EQ(got.size(), want.size());
            for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], double(std::stoll(want[i])));
          }
        }}},
      {"data/delta_encoding_required_column_expect.csv", {"", {}, nullptr}},
      {"data/datapage_v2.snappy.parquet",
       {"",
        {"b", "c"},
        [](const ParquetFile& f) {
          EXPECT_EQ(Col(f, "b"), (std::vector<double>{1, 2, 3, 4, 5}));
        }}},
      // Empty v2 values sections (all null): refused as nulls, not sent to the codec.
      {"data/datapage_v2_empty_datapage.snappy.parquet", {"null entries (1 in a page)"}},
      {"data/page_v2_empty_compressed.parquet", {"null entries"}},
      {"data/hadoop_lz4_compressed.parquet",
       {"",
        {"c0", "v11"},
        [](const ParquetFile& f) {
          EXPECT_EQ(Col(f, "c0"), kLz4C0);
          EXPECT_EQ(Col(f, "v11"), kLz4V11);
        }}},
      {"data/non_hadoop_lz4_compressed.parquet",
       {"",
        {"c0", "v11"},
        [](const ParquetFile& f) {
          EXPECT_EQ(Col(f, "c0"), kLz4C0);
          EXPECT_EQ(Col(f, "v11"), kLz4V11);
        }}},
      {"data/lz4_raw_compressed.parquet",
       {"",
        {"c0", "v11"},
        [](const ParquetFile& f) {
          EXPECT_EQ(Col(f, "c0"), kLz4C0);
          EXPECT_EQ(Col(f, "v11"), kLz4V11);
        }}},
      {"data/concatenated_gzip_members.parquet",  // 513 UINT64 in two gzip members
       {"",
        {"long_col"},
        [](const ParquetFile& f) { EXPECT_EQ(Col(f, "long_col"), Iota(1, 513)); }}},
      {"data/dict-page-offset-zero.parquet",
       {"",
        {"l_partkey"},
        [](const ParquetFile& f) {
          EXPECT_EQ(Col(f, "l_partkey"), std::vector<double>(39, 1552));
        }}},
      {"data/column_chunk_key_value_metadata.parquet",  // zero-row chunks
       {"",
        {"column1", "column2"},
        [](const ParquetFile& f) { EXPECT_TRUE(Col(f, "column1").empty()); }}},
      {"data/nan_in_stats.parquet",
       {"",
        {"x"},
        [](const ParquetFile& f) {
          const auto x = Col(f, "x");
          ASSERT_EQ(x.size(), 2u);
          EXPECT_EQ(x[0], 1);
          EXPECT_TRUE(std::isnan(x[1]));
        }}},
      {"data/floating_orders_nan_count.parquet",
       {"",
        {"float_ieee754", "double_typedef"},
        [](const ParquetFile& f) { EXPECT_EQ(Col(f, "double_ieee754").size(), 50u); }}},
      {"data/nested_lists.snappy.parquet", {"physical type BYTE_ARRAY", {"b"}}},
      {"data/nonnullable.impala.parquet", {"nested lists are not supported", {"ID"}}},
      // Just outside the scope: refused by name.
      {"data/nulls.snappy.parquet", {nulls}},
      {"data/null_list.parquet", {"logical type UNKNOWN"}},
      {"data/list_columns.parquet", {nulls}},
      {"data/int32_with_null_pages.parquet", {nulls}},
      {"data/single_nan.parquet", {nulls}},
      {"data/sort_columns.parquet", {nulls}},
      {"data/repeated_primitive_no_list.parquet", {nulls}},
      {"data/old_list_structure.parquet", {"nested lists are not supported"}},
      // Its footer says 0 rows, its row group 6: a contradiction is refused, not resolved (arrow-rs
      // goes by the row groups).
      {"data/repeated_no_annotation.parquet", {"the row groups hold 6 rows, the footer says 0"}},
      {"data/unknown-logical-type.parquet", {"physical type BYTE_ARRAY"}},
      {"data/int96_from_spark.parquet", {"physical type INT96"}},
      {"data/float16_nonzeros_and_nans.parquet", {"FIXED_LEN_BYTE_ARRAY"}},
      {"data/fixed_length_decimal.parquet", {"FIXED_LEN_BYTE_ARRAY"}},
      {"data/byte_array_decimal.parquet", {"physical type BYTE_ARRAY"}},
      {"data/binary.parquet", {"physical type BYTE_ARRAY"}},
      {"data/rle_boolean_encoding.parquet", {"physical type BOOLEAN"}},
      {"data/uniform_encryption.parquet.encrypted", {"encrypted parquet file (encrypted footer"}},
      {"data/encrypt_columns_plaintext_footer.parquet.encrypted",
       {"encrypted parquet file (plaintext footer"}},
  };
}

std::vector<std::string> ListFiles(const std::string& sub) {
  std::vector<std::string> out;
  DIR* d = opendir((kCorpus + sub).c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(sub + "/" + n);
  }
  closedir(d);
  return out;
}

TEST(ParquetCorpus, EveryFileHasItsVerdict) {
  const auto verdicts = Verdicts();
  std::vector<std::string> files = ListFiles("bad_data");
  for (const auto& f : ListFiles("data")) files.push_back(f);
  ASSERT_GE(files.size(), 50u);
  size_t bad = 0;
  for (const auto& name : files) {
    SCOPED_TRACE(name);
    auto it = verdicts.find(name);
    ASSERT_NE(it, verdicts.end()) << name << " has no verdict in this table";
    const Verdict& v = it->second;
    if (name.size() > 4 && name.substr(name.size() - 4) == ".csv") continue;
    auto f = ParquetFile::Open(kCorpus + name);
    std::vector<std::string> refusals;
    if (!f.ok()) {
      EXPECT_EQ(f.status().code(), Code::kData);
      refusals.push_back(f.status().message());
    } else {
      for (const auto& c : f->columns()) {
        auto r = f->ReadColumn(c.path);
        if (r.ok()) continue;
        EXPECT_EQ(r.status().code(), Code::kData) << r.status().ToString();
        EXPECT_NE(r.status().message().find(name), std::string::npos);
        refusals.push_back(r.status().message());
      }
      for (const auto& c : v.reads) {
        auto r = f->ReadColumn(c);
        EXPECT_TRUE(r.ok()) << r.status().ToString();
      }
      if (v.check) v.check(*f);
    }
    if (name.rfind("bad_data/", 0) == 0 && name != "bad_data/ARROW-GH-43605.parquet") {
      ++bad;
      EXPECT_FALSE(v.refused.empty()) << "a bad_data/ file must be refused";
    }
    if (v.refused.empty()) {
      EXPECT_TRUE(f.ok()) << f.status().ToString();
    } else {
      bool found = false;
      for (const auto& m : refusals) found = found || m.find(v.refused) != std::string::npos;
      EXPECT_TRUE(found) << "expected a refusal containing '" << v.refused << "'";
    }
  }
  EXPECT_EQ(bad, 7u);
  // And no verdict for a file that is not there.
  for (const auto& [name, v] : verdicts) {
    EXPECT_TRUE(std::find(files.begin(), files.end(), name) != files.end()) << name;
  }
}

}  // namespace
}  // namespace baton::parquet
