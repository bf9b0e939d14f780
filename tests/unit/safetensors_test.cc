#include "schema/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "schema/atomic_file.h"
#include "temp_dir.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
  std::string WriteSample() {
    const std::string path = tmp_ / "x.safetensors";
    EXPECT_TRUE(WriteSafetensors(path,
                                 {{"a", StDType::kF32, {2, 3}, a_.data()},
                                  {"b", StDType::kF64, {2}, b_.data()},
                                  {"h", StDType::kF16, {3}, half_.data()},
                                  {"z", StDType::kBF16, {2}, bf_.data()},
                                  {"e", StDType::kF32, {0, 4}, nullptr}},
                                 {{"format", "pt"}})
                    .ok());
    return path;
  }
  std::string Bytes(const std::string& path) { return ReadFile(path).value(); }
  void Put(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  std::string OpenError(const std::string& path) {
    auto r = SafetensorsFile::Open(path);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.status().message();
  }

  testing::TempDir tmp_;
  std::vector<float> a_ = {1, 2, 3, 4, 5, 6.5f};
  std::vector<double> b_ = {0.25, -1e300};
  std::vector<uint16_t> half_ = {0x3C00 /*1*/, 0xC000 /*-2*/, 0x0001 /*2^-24*/};
  std::vector<uint16_t> bf_ = {0x3F80 /*1*/, 0x4049 /*3.140625*/};
};

TEST_F(SafetensorsTest, RoundTripsEveryTensorAndMetadata) {
  auto f = SafetensorsFile::Open(WriteSample());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto& file = *f.value();
  ASSERT_EQ(file.tensors().size(), 5u);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.Find("a")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.ReadFloat32("a").value(), a_);
  auto b = file.ReadFloat32("b").value();
  EXPECT_EQ(b[0], 0.25f);
  auto h = file.ReadFloat32("h").value();
  EXPECT_EQ(h, (std::vector<float>{1.0f, -2.0f, 5.9604645e-08f}));
  EXPECT_EQ(file.ReadFloat32("z").value(), (std::vector<float>{1.0f, 3.140625f}));
  EXPECT_TRUE(file.ReadFloat32("e").value().empty());
  // The data section starts 8-byte aligned, as upstream readers expect.
  const std::string raw = Bytes(file.path());
  uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
}

TEST_F(SafetensorsTest, ShapeMismatchAndMissingTensorNameTheFile) {
  auto f = SafetensorsFile::Open(WriteSample()).value();
  std::vector<int64_t> want = {3, 2};
  auto r = f->ReadFloat32("a", &want);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x.safetensors: tensor 'a' has shape [2, 3], expected [3, 2]"),
            std::string::npos);
  EXPECT_NE(f->ReadFloat32("nope").status().message().find("tensor 'nope' is missing"),
            std::string::npos);
}

TEST_F(SafetensorsTest, TruncatedFileIsCorrupt) {
  const std::string path = WriteSample();
  std::string raw = Bytes(path);
  Put(path, raw.substr(0, raw.size() - 3));
  EXPECT_NE(OpenError(path).find("outside the"), std::string::npos);
  Put(path, raw.substr(0, 5));
  EXPECT_NE(OpenError(path).find("shorter than the 8-byte header length"), std::string::npos);
  Put(path, raw.substr(0, 40));
  EXPECT_NE(OpenError(path).find("exceeds the file size"), std::string::npos);
}

TEST_F(SafetensorsTest, FlippedHeaderByteIsCorrupt) {
  const std::string path = WriteSample();
  std::string raw = Bytes(path);
  raw[8] = '[';  // header no longer an object
  Put(path, raw);
  const std::string e = OpenError(path);
  EXPECT_NE(e.find(path + ": not a valid safetensors file"), std::string::npos) << e;
}

TEST_F(SafetensorsTest, InconsistentHeadersAreRejected) {
  auto write_header = [&](const std::string& json, size_t data_bytes) {
    std::string raw(8, '\0');
    const uint64_t n = json.size();
    std::memcpy(raw.data(), &n, 8);
    raw += json + std::string(data_bytes, '\0');
    Put(tmp_ / "h.safetensors", raw);
    return OpenError(tmp_ / "h.safetensors");
  };
  EXPECT_NE(write_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8)
                .find("needs 8"),
            std::string::npos);
  EXPECT_NE(write_header(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", 4)
                .find("unknown dtype"),
            std::string::npos);
  EXPECT_NE(write_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                         8)
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(write_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)
                .find("bad shape"),
            std::string::npos);
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  auto r = SafetensorsFile::Open(tmp_ / "none.safetensors");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
}

TEST_F(SafetensorsTest, WriteIsAtomicAndLeavesNoTempFiles) {
  const std::string path = WriteSample();
  int files = 0;
  for (const auto& e : fs::directory_iterator(tmp_.path())) {
    ++files;
    EXPECT_EQ(e.path().string(), path);
  }
  EXPECT_EQ(files, 1);
  // A repeated name is refused before anything is written.
  float x = 1;
  EXPECT_FALSE(WriteSafetensors(tmp_ / "dup.safetensors",
                                {{"a", StDType::kF32, {1}, &x}, {"a", StDType::kF32, {1}, &x}})
                   .ok());
  EXPECT_FALSE(fs::exists(tmp_ / "dup.safetensors"));
}

}  // namespace
}  // namespace baton
