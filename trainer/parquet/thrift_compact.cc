#include "trainer/parquet/thrift_compact.h"

#include <cstring>

namespace baton::parquet {
namespace {

constexpr int kMaxDepth = 32;
// Every value takes at least one byte on the wire (a bool inside a container is one byte too),
// so a decode can never produce more values than its bytes; this hard cap is the backstop that
// keeps a bug in that reasoning from turning into an unbounded loop.
constexpr uint64_t kMaxValues = uint64_t(1) << 24;

// Compact protocol wire types.
enum : uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size, size_t pos) : data_(data), size_(size), pos_(pos) {}
  size_t pos() const { return pos_; }

  Status Byte(uint8_t* out) {
    if (pos_ >= size_) return Status::Data("thrift: truncated");
    *out = data_[pos_++];
    return Status::Ok();
  }
  Status Varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      BATON_RETURN_IF_ERROR(Byte(&b));
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *out = v;
        return Status::Ok();
      }
    }
    return Status::Data("thrift: varint longer than 10 bytes");
  }
  Status ZigZag(int64_t* out) {
    uint64_t v;
    BATON_RETURN_IF_ERROR(Varint(&v));
    *out = int64_t(v >> 1) ^ -int64_t(v & 1);
    return Status::Ok();
  }

  // The fewest bytes an element of wire type `t` takes inside a list, set or map.
  static uint64_t MinBytes(uint8_t t) { return t == kDouble ? 8 : 1; }

  // A list, set or map element: as a value, except that a bool there is one byte of its own (in
  // a struct field the bool lives in the field header).
  Status Element(uint8_t type, int depth, ThriftValue* out) {
    if (type == kTrue || type == kFalse) {
      BATON_RETURN_IF_ERROR(Count());
      uint8_t b;
      BATON_RETURN_IF_ERROR(Byte(&b));
      out->kind = ThriftValue::Kind::kInt;
      out->i = b == 1;
      return Status::Ok();
    }
    return Value(type, depth, out);
  }

  Status Count() {
    if (++values_ > kMaxValues) return Status::Data("thrift: more than 2^24 values");
    return Status::Ok();
  }

  Status Value(uint8_t type, int depth, ThriftValue* out) {
    if (depth > kMaxDepth) return Status::Data("thrift: nesting deeper than 32");
    BATON_RETURN_IF_ERROR(Count());
    switch (type) {
      case kTrue:
      case kFalse:
        out->kind = ThriftValue::Kind::kInt;
        out->i = type == kTrue;
        return Status::Ok();
      case kByte: {
        uint8_t b;
        BATON_RETURN_IF_ERROR(Byte(&b));
        out->kind = ThriftValue::Kind::kInt;
        out->i = int8_t(b);
        return Status::Ok();
      }
      case kI16:
      case kI32:
      case kI64:
        out->kind = ThriftValue::Kind::kInt;
        return ZigZag(&out->i);
      case kDouble:
        return Double(out);
      case kBinary:
        return Binary(out);
      case kList:
      case kSet:
        return List(depth, out);
      case kMap:
        return SkipMap(depth);
      case kStruct:
        return Struct(depth + 1, out);
      default:
        return Status::Data("thrift: unknown wire type " + std::to_string(type));
    }
  }

  Status Double(ThriftValue* out) {
    if (size_ - pos_ < 8) return Status::Data("thrift: truncated double");
    uint64_t bits = 0;
    for (int k = 0; k < 8; ++k) bits |= uint64_t(data_[pos_ + k]) << (8 * k);
    pos_ += 8;
    std::memcpy(&out->d, &bits, 8);
    out->kind = ThriftValue::Kind::kDouble;
    return Status::Ok();
  }

  Status Binary(ThriftValue* out) {
    uint64_t n;
    BATON_RETURN_IF_ERROR(Varint(&n));
    if (n > size_ - pos_) return Status::Data("thrift: binary runs past the end");
    out->kind = ThriftValue::Kind::kBinary;
    out->bin.assign(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return Status::Ok();
  }

  // A list or a set, whose elements are one level deeper than `depth`.
  Status List(int depth, ThriftValue* out) {
    uint8_t h;
    BATON_RETURN_IF_ERROR(Byte(&h));
    uint64_t n = h >> 4;
    if (n == 15) BATON_RETURN_IF_ERROR(Varint(&n));
    const uint8_t elem = h & 0x0f;
    // Bounded by the bytes that remain (each element takes at least MinBytes) before any
    // element is stored; elements are appended as they are read, never reserved up front.
    if (n > (size_ - pos_) / MinBytes(elem)) {
      return Status::Data("thrift: list of " + std::to_string(n) + " elements longer than its " +
                          std::to_string(size_ - pos_) + " bytes");
    }
    out->kind = ThriftValue::Kind::kList;
    for (uint64_t k = 0; k < n; ++k) {
      out->list.emplace_back();
      BATON_RETURN_IF_ERROR(Element(elem, depth + 1, &out->list.back()));
    }
    return Status::Ok();
  }

  // A map is read through and dropped (parquet's headers use none); its value stays as it was.
  Status SkipMap(int depth) {
    uint64_t n;
    BATON_RETURN_IF_ERROR(Varint(&n));
    if (n == 0) return Status::Ok();
    uint8_t kv;
    BATON_RETURN_IF_ERROR(Byte(&kv));
    const uint64_t entry = MinBytes(kv >> 4) + MinBytes(kv & 0x0f);
    if (n > (size_ - pos_) / entry) {
      return Status::Data("thrift: map of " + std::to_string(n) + " entries longer than its " +
                          std::to_string(size_ - pos_) + " bytes");
    }
    for (uint64_t k = 0; k < n; ++k) {
      ThriftValue skip;
      BATON_RETURN_IF_ERROR(Element(kv >> 4, depth + 1, &skip));
      BATON_RETURN_IF_ERROR(Element(kv & 0x0f, depth + 1, &skip));
    }
    return Status::Ok();
  }

  Status Struct(int depth, ThriftValue* out) {
    out->kind = ThriftValue::Kind::kStruct;
    out->st = std::make_shared<ThriftStruct>();
    int16_t last = 0;
    while (true) {
      uint8_t h;
      BATON_RETURN_IF_ERROR(Byte(&h));
      if (h == kStop) return Status::Ok();
      const uint8_t type = h & 0x0f;
      int16_t id;
      if (h >> 4) {
        id = int16_t(last + (h >> 4));
      } else {
        int64_t v;
        BATON_RETURN_IF_ERROR(ZigZag(&v));
        id = int16_t(v);
      }
      last = id;
      BATON_RETURN_IF_ERROR(Value(type, depth, &(*out->st)[id]));
    }
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_;
  uint64_t values_ = 0;
};

}  // namespace

const ThriftValue* ThriftValue::Field(int16_t id) const {
  if (kind != Kind::kStruct || !st) return nullptr;
  auto it = st->find(id);
  return it == st->end() ? nullptr : &it->second;
}

int64_t ThriftValue::Int(int16_t id, int64_t def) const {
  const ThriftValue* f = Field(id);
  return f && f->kind == Kind::kInt ? f->i : def;
}

Result<ThriftValue> ReadThriftStruct(const uint8_t* data, size_t size, size_t* pos) {
  Reader r(data, size, *pos);
  ThriftValue v;
  BATON_RETURN_IF_ERROR(r.Struct(0, &v));
  *pos = r.pos();
  return v;
}

}  // namespace baton::parquet
