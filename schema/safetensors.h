// Safetensors: the tensor file format of episodes and checkpoints (docs/safetensors.md).
//
// Layout: u64 little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the raw little-endian tensor bytes. Offsets are relative to the byte after the header.
// This unit knows bytes, dtypes and shapes only (no libtorch), so the orchestrator can use it too.
// SafetensorsFile maps a file read-only and validates every header entry before handing out
// views; it is immutable after Open and safe to share between threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

enum class StDType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };

const char* StDTypeName(StDType dtype);  // "F32", ...
size_t StDTypeSize(StDType dtype);       // bytes per element
bool ParseStDType(const std::string& name, StDType* out);

struct StTensorInfo {
  std::string name;
  StDType dtype = StDType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps `path` and validates it: a regular file (a FIFO or device is refused before it is
  // opened, so Open never blocks), header length within the file, JSON well formed, every dtype
  // known, a shape whose byte size fits in int64 (checked without wrapping), every byte range
  // inside the data, matching dtype x shape, and not overlapping another. Code::kNotFound when
  // the file is missing, Code::kData for anything corrupt; the message names the file and
  // tensor.
  static Result<std::shared_ptr<const SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<StTensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const StTensorInfo* Find(const std::string& name) const;
  const uint8_t* Data(const StTensorInfo& t) const { return data_ + t.begin; }

  // The named tensor converted to float32 / float64 (F64, F32, F16, BF16, ints, U8, BOOL);
  // Code::kData naming file and tensor when absent or when `expected_shape` (if given) differs.
  Result<std::vector<float>> ReadFloat32(
      const std::string& name, const std::vector<int64_t>* expected_shape = nullptr) const;
  // The named tensor converted to float64 without an intermediate float32 (exact for F64, F32,
  // F16, BF16 and integers up to 2^53).
  Result<std::vector<double>> ReadFloat64(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;
  std::vector<StTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: a view of caller-owned bytes (little-endian, contiguous).
struct StTensorRef {
  std::string name;
  StDType dtype = StDType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// The JSON header of a file holding `tensors` in the given order, padded with spaces so the data
// section starts 8-byte aligned (as upstream writers do); the file is its 8-byte little-endian
// length, this text, then each tensor's bytes. Names must be unique and not "__metadata__", and
// the sizes must fit 64 bits (InvalidArgument naming `path` otherwise). One layout for every
// writer: WriteSafetensors and the checkpoint's hashing writer.
Result<std::string> SafetensorsHeader(const std::string& path,
                                      const std::vector<StTensorRef>& tensors,
                                      const std::map<std::string, std::string>& metadata);

// Writes the tensors in the given order, atomically (temp file, fsync, rename, dir fsync).
// Names must be unique and not "__metadata__".
Status WriteSafetensors(const std::string& path, const std::vector<StTensorRef>& tensors,
                        const std::map<std::string, std::string>& metadata = {});

std::string ShapeString(const std::vector<int64_t>& shape);  // "[4, 120, 8, 8]"

}  // namespace baton
