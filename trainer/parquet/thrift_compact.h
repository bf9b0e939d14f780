// ThriftReader: a decoder for the Thrift compact protocol, the encoding of a parquet file's footer
// and page headers. It reads a struct into a generic tree (field id -> value) so the parquet
// layer picks the fields it knows and ignores the rest, as Thrift readers must: files written by
// newer writers add fields (statistics, size statistics, encryption) that older readers skip.
//
// Owns nothing: it reads from a caller's byte range. Any malformed input (truncation, an unknown
// wire type, nesting deeper than 32, a list, set or map claiming more elements than its remaining
// bytes hold, more than 2^24 values in all) is a Status, never a crash; elements are stored as
// they are read, never reserved for a claimed count.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton::parquet {

struct ThriftValue;
using ThriftStruct = std::map<int16_t, ThriftValue>;

struct ThriftValue {
  enum class Kind { kInt, kDouble, kBinary, kList, kStruct };
  Kind kind = Kind::kInt;
  int64_t i = 0;  // bool, byte, i16, i32, i64
  double d = 0;
  std::string bin;
  std::vector<ThriftValue> list;  // list, set (maps are skipped: parquet's headers use none)
  std::shared_ptr<ThriftStruct> st;

  // Field accessors for a struct value; `def` when the field is absent or of another kind.
  int64_t Int(int16_t id, int64_t def = -1) const;
  const ThriftValue* Field(int16_t id) const;
};

// Decodes one struct starting at data[*pos], advancing *pos past it.
Result<ThriftValue> ReadThriftStruct(const uint8_t* data, size_t size, size_t* pos);

}  // namespace baton::parquet
