#include "schema/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "schema/file_kind.h"
#include "schema/safetensors_shape.h"

namespace baton {
namespace {

// A header bigger than this is corrupt, not a real model (upstream's own guard is 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct DTypeEntry {
  StDType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {StDType::kF64, "F64", 8},   {StDType::kF32, "F32", 4}, {StDType::kF16, "F16", 2},
    {StDType::kBF16, "BF16", 2}, {StDType::kI64, "I64", 8}, {StDType::kI32, "I32", 4},
    {StDType::kI16, "I16", 2},   {StDType::kI8, "I8", 1},   {StDType::kU8, "U8", 1},
    {StDType::kBool, "BOOL", 1},
};

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Messages quote the file's own keys and values, cut to a bounded size: a header is up to
// 100 MB of someone else's JSON.
constexpr size_t kMaxQuote = 120;

std::string Cut(const std::string& s) {
  if (s.size() <= kMaxQuote) return s;
  return s.substr(0, kMaxQuote) + "... (" + std::to_string(s.size()) + " bytes)";
}

// A JSON value for a message, never serialised in full: a nested value would recurse once per
// level (a 100,000-deep `shape` overflows the stack), so containers show their scalars only.
std::string Quote(const nlohmann::json& j) {
  if (!j.is_structured()) return Cut(j.dump());
  const bool array = j.is_array();
  std::string s = array ? "[" : "{";
  size_t shown = 0;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (s.size() > kMaxQuote) {
      s += ", ... (" + std::to_string(j.size()) + " elements)";
      break;
    }
    if (shown++) s += ", ";
    if (!array) s += Cut(nlohmann::json(it.key()).dump()) + ": ";
    s += it->is_array() ? "[...]" : it->is_object() ? "{...}" : Cut(it->dump());
  }
  return s + (array ? "]" : "}");
}

template <class T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
std::vector<T> Convert(const StTensorInfo& t, const uint8_t* p) {
  const int64_t n = t.numel();
  std::vector<T> out(static_cast<size_t>(n));
  switch (t.dtype) {
    case StDType::kF32:
      for (int64_t i = 0; i < n; ++i) out[i] = T(Load<float>(p + 4 * i));
      break;
    case StDType::kF64:
      for (int64_t i = 0; i < n; ++i) out[i] = T(Load<double>(p + 8 * i));
      break;
    case StDType::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = T(HalfToFloat(Load<uint16_t>(p + 2 * i)));
      break;
    case StDType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t bits = uint32_t(Load<uint16_t>(p + 2 * i)) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        out[i] = T(f);
      }
      break;
    case StDType::kI64:
      for (int64_t i = 0; i < n; ++i) out[i] = T(Load<int64_t>(p + 8 * i));
      break;
    case StDType::kI32:
      for (int64_t i = 0; i < n; ++i) out[i] = T(Load<int32_t>(p + 4 * i));
      break;
    case StDType::kI16:
      for (int64_t i = 0; i < n; ++i) out[i] = T(Load<int16_t>(p + 2 * i));
      break;
    case StDType::kI8:
      for (int64_t i = 0; i < n; ++i) out[i] = T(int8_t(p[i]));
      break;
    case StDType::kU8:
    case StDType::kBool:
      for (int64_t i = 0; i < n; ++i) out[i] = T(p[i]);
      break;
  }
  return out;
}

}  // namespace

const char* StDTypeName(StDType dtype) {
  for (const auto& e : kDTypes) {
    if (e.dtype == dtype) return e.name;
  }
  return "?";
}

size_t StDTypeSize(StDType dtype) {
  for (const auto& e : kDTypes) {
    if (e.dtype == dtype) return e.size;
  }
  return 0;
}

bool ParseStDType(const std::string& name, StDType* out) {
  for (const auto& e : kDTypes) {
    if (name == e.name) {
      *out = e.dtype;
      return true;
    }
  }
  return false;
}

int64_t StTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

const StTensorInfo* SafetensorsFile::Find(const std::string& name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {

Status Corrupt(const std::string& path, const std::string& why) {
  return Status::Data(path + ": not a valid safetensors file: " + why);
}

// Maps `path` read-only once it is known to be a regular file at least as long as the header
// length. Refused before opening: opening a FIFO blocks until a writer comes, and a device never
// ends. On success the caller owns `*map` (`*size` bytes).
Status MapRegularFile(const std::string& path, void** map, uint64_t* size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::Io(path + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    return Corrupt(path, "it is " + FileKind(st.st_mode) + ", not a regular file");
  // O_NONBLOCK: a FIFO swapped in after the stat must not block the open either.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::Io(path + ": cannot open: " + std::strerror(errno));
  }
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status::Io(path + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Corrupt(path, "it is " + FileKind(st.st_mode) + ", not a regular file");
  }
  *size = static_cast<uint64_t>(st.st_size);
  if (*size < 8) {
    ::close(fd);
    return Corrupt(
        path, "file is " + std::to_string(*size) + " bytes, shorter than the 8-byte header length");
  }
  *map = ::mmap(nullptr, *size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (*map == MAP_FAILED) {
    *map = nullptr;
    return Status::Io(path + ": mmap failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

// The header's JSON, which must be an object.
Status ParseHeaderJson(const std::string& path, const uint8_t* begin, const uint8_t* end,
                       nlohmann::json* header) {
  try {
    *header = nlohmann::json::parse(begin, end);
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(path, "header is not JSON: " + Cut(e.what()));
  }
  if (!header->is_object()) return Corrupt(path, "header is not a JSON object");
  return Status::Ok();
}

// __metadata__: an object whose values are strings.
Status ParseMetadata(const std::string& path, const nlohmann::json& m,
                     std::map<std::string, std::string>* metadata) {
  if (!m.is_object()) return Corrupt(path, "__metadata__ is not an object");
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it->is_string())
      return Corrupt(path, "__metadata__." + Cut(it.key()) + " is not a string");
    (*metadata)[it.key()] = it->get<std::string>();
  }
  return Status::Ok();
}

// One tensor's entry: dtype known, shape of non-negative int64s whose byte size fits in 64 bits,
// byte range inside the `data_size`-byte data section and exactly as long as dtype x shape.
// A JSON exception propagates (the caller reports it as a bad header).
Result<StTensorInfo> ParseTensorEntry(const std::string& path, const std::string& name,
                                      const nlohmann::json& e, uint64_t data_size) {
  StTensorInfo t;
  t.name = name;
  const std::string quoted = Cut(t.name);
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
      !e.contains("data_offsets")) {
    return Corrupt(path, "tensor '" + quoted + "' lacks dtype, shape or data_offsets");
  }
  if (!e["dtype"].is_string() || !ParseStDType(e["dtype"].get<std::string>(), &t.dtype)) {
    return Corrupt(path, "tensor '" + quoted + "' has unknown dtype " + Quote(e["dtype"]));
  }
  if (!e["shape"].is_array()) {
    return Corrupt(path, "tensor '" + quoted + "' has a bad shape " + Quote(e["shape"]));
  }
  for (const auto& d : e["shape"]) {
    // An unsigned above INT64_MAX would turn negative in get<int64_t>: rejected as such.
    if (!d.is_number_integer() || (d.is_number_unsigned() && d.get<uint64_t>() > INT64_MAX) ||
        d.get<int64_t>() < 0) {
      return Corrupt(path, "tensor '" + quoted + "' has a bad shape " + Quote(e["shape"]));
    }
    t.shape.push_back(d.get<int64_t>());
  }
  uint64_t numel = 0, nbytes = 0;
  if (!SafetensorsShapeBytes(t.shape, StDTypeSize(t.dtype), &numel, &nbytes)) {
    return Corrupt(path, "tensor '" + quoted + "' has shape " + Cut(ShapeString(t.shape)) +
                             " whose size in " + StDTypeName(t.dtype) + " bytes overflows 64 bits");
  }
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned()) {
    return Corrupt(path, "tensor '" + quoted + "' has bad data_offsets " + Quote(off));
  }
  t.begin = off[0].get<uint64_t>();
  t.end = off[1].get<uint64_t>();
  if (t.begin > t.end || t.end > data_size) {
    return Corrupt(path, "tensor '" + quoted + "' bytes [" + std::to_string(t.begin) + ", " +
                             std::to_string(t.end) + ") lie outside the " +
                             std::to_string(data_size) + "-byte data section (truncated?)");
  }
  if (t.end - t.begin != nbytes) {
    return Corrupt(path, "tensor '" + quoted + "' holds " + std::to_string(t.end - t.begin) +
                             " bytes but dtype " + StDTypeName(t.dtype) + " x shape " +
                             Cut(ShapeString(t.shape)) + " needs " + std::to_string(nbytes));
  }
  return t;
}

// Every entry of the header, in its order: __metadata__, and the tensors.
Status ParseHeaderEntries(const std::string& path, const nlohmann::json& header, uint64_t data_size,
                          std::vector<StTensorInfo>* tensors,
                          std::map<std::string, std::string>* metadata) {
  try {
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") {
        BATON_RETURN_IF_ERROR(ParseMetadata(path, *it, metadata));
        continue;
      }
      BATON_ASSIGN_OR_RETURN(StTensorInfo t, ParseTensorEntry(path, it.key(), *it, data_size));
      tensors->push_back(std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(path, "bad header: " + Cut(e.what()));
  }
  return Status::Ok();
}

// No two tensors share a byte.
Status CheckNoOverlap(const std::string& path, const std::vector<StTensorInfo>& tensors) {
  std::vector<const StTensorInfo*> by_offset;
  for (const auto& t : tensors) {
    if (t.begin < t.end) by_offset.push_back(&t);  // an empty range overlaps nothing
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const StTensorInfo* a, const StTensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      return Corrupt(path, "tensors '" + Cut(by_offset[i - 1]->name) + "' and '" +
                               Cut(by_offset[i]->name) + "' overlap");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<const SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  void* map = nullptr;
  uint64_t size = 0;
  BATON_RETURN_IF_ERROR(MapRegularFile(path, &map, &size));
  // The file owns the mapping from here, whatever is returned.
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->map_ = map;
  file->map_size_ = size;
  const auto* bytes = static_cast<const uint8_t*>(map);

  const uint64_t header_len = Load<uint64_t>(bytes);
  if (header_len > kMaxHeaderBytes || header_len > size - 8) {
    return Corrupt(path, "header length " + std::to_string(header_len) + " exceeds the file size " +
                             std::to_string(size) + " (truncated or not safetensors)");
  }
  file->data_ = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  nlohmann::json header;
  BATON_RETURN_IF_ERROR(ParseHeaderJson(path, bytes + 8, bytes + 8 + header_len, &header));
  BATON_RETURN_IF_ERROR(
      ParseHeaderEntries(path, header, data_size, &file->tensors_, &file->metadata_));
  BATON_RETURN_IF_ERROR(CheckNoOverlap(path, file->tensors_));
  return std::shared_ptr<const SafetensorsFile>(std::move(file));
}

Result<std::vector<float>> SafetensorsFile::ReadFloat32(
    const std::string& name, const std::vector<int64_t>* expected_shape) const {
  const StTensorInfo* t = Find(name);
  if (t == nullptr) return Status::Data(path_ + ": tensor '" + name + "' is missing");
  if (expected_shape != nullptr && *expected_shape != t->shape) {
    return Status::Data(path_ + ": tensor '" + name + "' has shape " + Cut(ShapeString(t->shape)) +
                        ", expected " + Cut(ShapeString(*expected_shape)));
  }
  if (t->dtype == StDType::kF32) {
    std::vector<float> out(static_cast<size_t>(t->numel()));
    if (!out.empty()) std::memcpy(out.data(), Data(*t), out.size() * 4);
    return out;
  }
  return Convert<float>(*t, Data(*t));
}

Result<std::vector<double>> SafetensorsFile::ReadFloat64(const std::string& name) const {
  const StTensorInfo* t = Find(name);
  if (t == nullptr) return Status::Data(path_ + ": tensor '" + name + "' is missing");
  return Convert<double>(*t, Data(*t));
}

}  // namespace baton
