#include "schema/safetensors.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>

#include "schema/atomic_file.h"
#include "tests/common/temp_dir.h"

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

  test::TempDir tmp_;
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
  EXPECT_NE(
      r.status().message().find("x.safetensors: tensor 'a' has shape [2, 3], expected [3, 2]"),
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
  EXPECT_NE(
      write_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8).find("needs 8"),
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

// Shapes whose byte size wraps around 2^64 used to match a tiny data range: [2^62, 4] F32 is
// 2^66 bytes, which is 0 modulo 2^64.
TEST_F(SafetensorsTest, ShapesWhoseSizeOverflowsAreCorrupt) {
  auto open = [&](const std::string& json, size_t data_bytes) {
    std::string raw(8, '\0');
    const uint64_t n = json.size();
    std::memcpy(raw.data(), &n, 8);
    raw += json + std::string(data_bytes, '\0');
    const std::string path = tmp_ / "o.safetensors";
    Put(path, raw);
    return SafetensorsFile::Open(path);
  };
  const std::string path = tmp_ / "o.safetensors";
  struct Case {
    const char* json;
    size_t data;
    const char* want;
  };
  const Case cases[] = {
      {R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", 0,
       "tensor 'w' has shape [4611686018427387904, 4] whose size in F32 bytes overflows 64 bits"},
      {R"({"w":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})", 0,
       "tensor 'w' has shape [2305843009213693952] whose size in F64 bytes overflows 64 bits"},
      {R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0,
       "whose size in U8 bytes overflows 64 bits"},
      // Wraps to 8 bytes: 2^61 + 1 elements of F64 is 2^64 + 8.
      {R"({"w":{"dtype":"F64","shape":[2305843009213693953],"data_offsets":[0,8]}})", 8,
       "overflows 64 bits"},
      // A zero dimension does not excuse the others: code that multiplies them would overflow.
      {R"({"w":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904,0],"data_offsets":[0,0]}})",
       0, "overflows 64 bits"},
      // Above INT64_MAX: not a dimension at all.
      {R"({"w":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,0]}})", 0,
       "tensor 'w' has a bad shape [18446744073709551615]"},
      {R"({"w":{"dtype":"F32","shape":4,"data_offsets":[0,16]}})", 16,
       "tensor 'w' has a bad shape 4"},
      // Offsets at the top of the range lie outside the data, whatever end - begin says.
      {R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}})",
       0, "lie outside the 0-byte data section"},
      {R"({"w":{"dtype":"U8","shape":[8],"data_offsets":[18446744073709551608,0]}})", 8,
       "bytes [18446744073709551608, 0) lie outside"},
  };
  for (const Case& c : cases) {
    auto r = open(c.json, c.data);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), Code::kData) << c.json;
    EXPECT_EQ(r.status().exit_code(), 65);
    EXPECT_NE(r.status().message().find(path + ": not a valid safetensors file: "),
              std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
  // A header length of 2^64 - 1 does not wrap past the file size check.
  std::string raw(8, '\xff');
  raw += "{}";
  Put(path, raw);
  EXPECT_NE(OpenError(path).find("header length 18446744073709551615 exceeds the file size 10"),
            std::string::npos);
  // Sane shapes still open: an empty tensor at offset 0 (overlapping nothing) beside one that
  // fills its range from offset 0.
  auto ok = open(R"({"e":{"dtype":"F32","shape":[0,4096],"data_offsets":[0,0]},)"
                 R"("w":{"dtype":"I16","shape":[2,3],"data_offsets":[0,12]}})",
                 12);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok.value()->Find("e")->numel(), 0);
  EXPECT_EQ(ok.value()->Find("w")->numel(), 6);
}

TEST_F(SafetensorsTest, WriterRefusesShapesWhoseSizeOverflows) {
  float x = 0;
  const std::string path = tmp_ / "big.safetensors";
  const Status st = WriteSafetensors(path, {{"w", StDType::kF32, {int64_t{1} << 62, 4}, &x}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find(path + ": tensor 'w' has shape [4611686018427387904, 4] whose size "
                                     "overflows 64 bits"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(SafetensorsTest, NonRegularFilesAreDataErrorsAndNeverBlock) {
  const std::string dir = tmp_ / "d.safetensors";
  fs::create_directories(dir);
  auto r = SafetensorsFile::Open(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kData);
  EXPECT_NE(r.status().message().find(dir + ": not a valid safetensors file: it is a folder, not a "
                                            "regular file"),
            std::string::npos)
      << r.status().message();

  const std::string fifo = tmp_ / "f.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto pending = std::async(std::launch::async, [&] { return SafetensorsFile::Open(fifo); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::ofstream unblock(fifo);  // lets the blocked open finish before failing
    FAIL() << "Open blocked on a FIFO";
  }
  r = pending.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 65);
  EXPECT_NE(r.status().message().find(fifo + ": not a valid safetensors file: it is a FIFO"),
            std::string::npos)
      << r.status().message();

  // A symlink to a FIFO is judged by what it points at.
  fs::create_symlink(fifo, tmp_ / "link.safetensors");
  EXPECT_NE(OpenError(tmp_ / "link.safetensors").find("it is a FIFO"), std::string::npos);
  EXPECT_NE(OpenError("/dev/null")
                .find("/dev/null: not a valid safetensors file: it is a "
                      "character device"),
            std::string::npos);
}

TEST_F(SafetensorsTest, ReadFloat64IsExactForEveryDtype) {
  auto f = SafetensorsFile::Open(WriteSample()).value();
  EXPECT_EQ(f->ReadFloat64("b").value(), (std::vector<double>{0.25, -1e300}));
  EXPECT_EQ(f->ReadFloat64("a").value(), (std::vector<double>{1, 2, 3, 4, 5, 6.5}));
  EXPECT_EQ(f->ReadFloat64("h").value(), (std::vector<double>{1.0, -2.0, std::ldexp(1.0, -24)}));
  EXPECT_EQ(f->ReadFloat64("z").value(), (std::vector<double>{1.0, 3.140625}));
  EXPECT_TRUE(f->ReadFloat64("e").value().empty());
  EXPECT_FALSE(f->ReadFloat64("nope").ok());
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
