// The safetensors reader's messages quote the file's keys and values cut to a bounded size:
// they are someone else's JSON, up to 100 MB of it, and may nest 100,000 deep.
#include <cstdint>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "schema/safetensors.h"
#include "tests/common/temp_dir.h"

namespace baton {
namespace {

std::string WriteRaw(const test::TempDir& dir, const std::string& header) {
  const std::string path = dir / "t.safetensors";
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  return path;
}

TEST(SafetensorsBounded, DeeplyNestedShapeIsRefusedWithoutRecursion) {
  test::TempDir dir;
  const int depth = 100000;
  const std::string shape = std::string(depth, '[') + std::string(depth, ']');
  const std::string path = WriteRaw(
      dir, R"({"w": {"dtype": "F32", "shape": )" + shape + R"(, "data_offsets": [0, 0]}})");
  auto f = SafetensorsFile::Open(path);  // serialising the shape in full overflows the stack
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kData);
  EXPECT_NE(f.status().message().find("tensor 'w' has a bad shape [[...]]"), std::string::npos)
      << f.status().message();
  EXPECT_LT(f.status().message().size(), 400u);
}

TEST(SafetensorsBounded, LongKeysAndValuesAreCut) {
  test::TempDir dir;
  const std::string name(1 << 20, 'n');
  const std::string dtype(1 << 20, 'D');
  const std::string path = WriteRaw(dir, R"({")" + name + R"(": {"dtype": ")" + dtype +
                                             R"(", "shape": [1], "data_offsets": [0, 4]}})");
  auto f = SafetensorsFile::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("has unknown dtype"), std::string::npos);
  EXPECT_LT(f.status().message().size(), 600u) << f.status().message().substr(0, 600);
  // A shape of many dimensions is quoted in part.
  std::string dims = "1";
  for (int k = 0; k < 100000; ++k) dims += ", 1";
  const std::string p2 = WriteRaw(
      dir, R"({"w": {"dtype": "F32", "shape": [)" + dims + R"(, -1], "data_offsets": [0, 4]}})");
  auto g = SafetensorsFile::Open(p2);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("has a bad shape [1, 1"), std::string::npos);
  EXPECT_LT(g.status().message().size(), 600u);
  // A parse error quotes at most a bounded part of the token it stopped at.
  const std::string p3 = WriteRaw(dir, R"({"w": ")" + std::string(1 << 20, 'x'));
  auto h = SafetensorsFile::Open(p3);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("header is not JSON"), std::string::npos);
  EXPECT_LT(h.status().message().size(), 600u);
}

}  // namespace
}  // namespace baton
