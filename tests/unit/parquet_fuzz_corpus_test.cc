// The fuzz corpus (fuzz/corpus/) and any input a fuzzer crashed on (tests/data/fuzz/, one folder
// per target) read in the normal build, the way the fuzz targets read them: each is read or
// refused with a named kData error, so a crash once found stays fixed without clang.
#include <dirent.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "schema/safetensors.h"
#include "trainer/lerobot/pickle_scan.h"
#include "trainer/parquet/parquet_file.h"
#include "trainer/parquet/thrift_compact.h"

namespace baton {
namespace {

std::vector<std::string> Inputs(const std::string& target) {
  std::vector<std::string> out;
  for (const std::string& dir : {std::string(BATON_SOURCE_DIR) + "/fuzz/corpus/" + target,
                                 std::string(BATON_SOURCE_DIR) + "/tests/data/fuzz/" + target}) {
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
    }
    closedir(d);
  }
  return out;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FuzzCorpus, ParquetInputsReadOrAreRefusedByName) {
  const auto inputs = Inputs("parquet_file");
  ASSERT_FALSE(inputs.empty());
  parquet::ParquetLimits limits;  // the fuzz target's
  limits.max_page_bytes = size_t(16) << 20;
  limits.max_column_values = int64_t(1) << 22;
  int read = 0;
  for (const auto& path : inputs) {
    auto f = parquet::ParquetFile::FromBytes(path, Slurp(path), limits);
    if (!f.ok()) {
      EXPECT_EQ(f.status().code(), Code::kData) << path;
      continue;
    }
    for (const auto& c : f->columns()) {
      auto r = f->ReadColumn(c.path);
      if (r.ok()) {
        ++read;
        EXPECT_EQ(r->rows(), f->num_rows()) << path << " " << c.path;
      } else {
        EXPECT_EQ(r.status().code(), Code::kData) << path;
        EXPECT_NE(r.status().message().find(path), std::string::npos);
      }
    }
  }
  EXPECT_GT(read, 0);
}

TEST(FuzzCorpus, ThriftInputsDecodeOrAreRefused) {
  const auto inputs = Inputs("thrift");
  ASSERT_FALSE(inputs.empty());
  for (const auto& path : inputs) {
    const std::string bytes = Slurp(path);
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    size_t pos = 0;
    while (pos < bytes.size()) {
      const size_t before = pos;
      auto v = parquet::ReadThriftStruct(data, bytes.size(), &pos);
      if (!v.ok()) {
        EXPECT_EQ(v.status().code(), Code::kData) << path;
        break;
      }
      ASSERT_GT(pos, before) << path;
      ASSERT_LE(pos, bytes.size()) << path;
    }
  }
}

TEST(FuzzCorpus, SafetensorsInputsOpenOrAreRefused) {
  const auto inputs = Inputs("safetensors");
  ASSERT_FALSE(inputs.empty());
  for (const auto& path : inputs) {
    auto st = SafetensorsFile::Open(path);
    if (!st.ok()) {
      EXPECT_EQ(st.status().code(), Code::kData) << path;
      continue;
    }
    for (const auto& t : (*st)->tensors()) {
      auto v = (*st)->ReadFloat64(t.name);
      ASSERT_TRUE(v.ok()) << path;
      EXPECT_EQ(int64_t(v->size()), t.numel());
    }
  }
}

TEST(FuzzCorpus, TorchSaveInputsScanOrAreRefusedByName) {
  const auto inputs = Inputs("torch_save");
  ASSERT_FALSE(inputs.empty());
  int scanned = 0;
  for (const auto& path : inputs) {
    TorchSave save;
    const Status st = ScanTorchSave(Slurp(path), &save);
    if (!st.ok()) {
      EXPECT_EQ(st.code(), Code::kData) << path << ": " << st.ToString();
      continue;
    }
    ASSERT_TRUE(save.root) << path;
    ++scanned;
  }
  EXPECT_GT(scanned, 0);  // the seeds torch.save wrote are read
}

}  // namespace
}  // namespace baton
