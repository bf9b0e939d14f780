#include "orchestrator/store/pg_values.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace baton {

namespace {

// Type oids of pg_type (fixed since PostgreSQL 7).
constexpr Oid kBool = 16, kBytea = 17, kName = 19, kInt8 = 20, kInt2 = 21, kInt4 = 23, kText = 25,
              kOid = 26, kFloat4 = 700, kFloat8 = 701, kUnknown = 705, kBpchar = 1042,
              kVarchar = 1043;

bool IsTextLike(Oid t) {
  return t == kText || t == kName || t == kUnknown || t == kBpchar || t == kVarchar;
}

// Big-endian unsigned integer of `n` bytes.
uint64_t Be(const char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// A binary numeric value: an integer for integer types and bool, else a double (`is_int` says).
double BinaryNumber(const PGresult* res, int row, int col, int64_t* as_int, bool* is_int) {
  const char* p = PQgetvalue(res, row, col);
  const Oid t = PQftype(res, col);
  *is_int = true;
  switch (t) {
    case kBool:
      *as_int = p[0] != 0 ? 1 : 0;
      return double(*as_int);
    case kInt2:
      *as_int = static_cast<int16_t>(Be(p, 2));
      return double(*as_int);
    case kInt4:
    case kOid:
      *as_int = t == kOid ? int64_t(Be(p, 4)) : int64_t(static_cast<int32_t>(Be(p, 4)));
      return double(*as_int);
    case kInt8:
      *as_int = static_cast<int64_t>(Be(p, 8));
      return double(*as_int);
    case kFloat4: {
      const uint32_t bits = static_cast<uint32_t>(Be(p, 4));
      float f;
      std::memcpy(&f, &bits, sizeof f);
      *is_int = false;
      return double(f);
    }
    case kFloat8: {
      const uint64_t bits = Be(p, 8);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      *is_int = false;
      return d;
    }
    default:
      *is_int = false;
      return std::strtod(p, nullptr);  // a text-like column: its text, as the text form
  }
}

int64_t TextInt(const char* v) {
  if (std::strcmp(v, "t") == 0) return 1;  // a boolean expression reads as SQLite's 0/1
  if (std::strcmp(v, "f") == 0) return 0;
  if (std::strpbrk(v, ".eEIN") != nullptr) {
    const double d = std::strtod(v, nullptr);
    return std::isfinite(d) ? static_cast<int64_t>(d) : 0;
  }
  return std::strtoll(v, nullptr, 10);
}

double TextDouble(const char* v) {
  if (std::strcmp(v, "t") == 0) return 1;
  if (std::strcmp(v, "f") == 0) return 0;
  return std::strtod(v, nullptr);
}

}  // namespace

bool PgBinaryReadable(const PGresult* res) {
  for (int c = 0; c < PQnfields(res); ++c) {
    const Oid t = PQftype(res, c);
    const bool known = IsTextLike(t) || t == kBool || t == kBytea || t == kInt2 || t == kInt4 ||
                       t == kInt8 || t == kOid || t == kFloat4 || t == kFloat8;
    if (!known) return false;
  }
  return true;
}

int64_t PgInt(const PGresult* res, int row, int col, bool binary) {
  if (!binary || IsTextLike(PQftype(res, col))) return TextInt(PQgetvalue(res, row, col));
  int64_t i = 0;
  bool is_int = false;
  const double d = BinaryNumber(res, row, col, &i, &is_int);
  if (is_int) return i;
  return std::isfinite(d) ? static_cast<int64_t>(d) : 0;
}

double PgDouble(const PGresult* res, int row, int col, bool binary) {
  if (!binary || IsTextLike(PQftype(res, col))) return TextDouble(PQgetvalue(res, row, col));
  int64_t i = 0;
  bool is_int = false;
  return BinaryNumber(res, row, col, &i, &is_int);
}

std::string PgText(const PGresult* res, int row, int col, bool binary) {
  const Oid t = PQftype(res, col);
  if (!binary || IsTextLike(t) || t == kBytea) {
    return std::string(PQgetvalue(res, row, col), static_cast<size_t>(PQgetlength(res, row, col)));
  }
  int64_t i = 0;
  bool is_int = false;
  const double d = BinaryNumber(res, row, col, &i, &is_int);
  if (t == kBool) return i != 0 ? "t" : "f";
  return is_int ? std::to_string(i) : PgFormatDouble(d);
}

std::string PgBytes(const PGresult* res, int row, int col, bool binary) {
  if (binary) {
    return std::string(PQgetvalue(res, row, col), static_cast<size_t>(PQgetlength(res, row, col)));
  }
  size_t len = 0;
  unsigned char* raw =
      PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(res, row, col)), &len);
  std::string bytes = raw != nullptr ? std::string(reinterpret_cast<char*>(raw), len) : "";
  PQfreemem(raw);
  return bytes;
}

std::string PgFormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  // The shortest digits that read back as `v`, as the server prints a double.
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  return std::string(buf, end);
}

}  // namespace baton
