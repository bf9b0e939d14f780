#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "schema/atomic_file.h"
#include "schema/safetensors.h"
#include "schema/safetensors_shape.h"

namespace baton {

Result<std::string> SafetensorsHeader(const std::string& path,
                                      const std::vector<StTensorRef>& tensors,
                                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second) {
      return Status::InvalidArgument(path + ": tensor name '" + t.name +
                                     "' is reserved or repeated");
    }
    uint64_t numel = 0, nbytes = 0;
    if (!SafetensorsShapeBytes(t.shape, StDTypeSize(t.dtype), &numel, &nbytes) ||
        __builtin_add_overflow(offset, nbytes, &nbytes)) {
      return Status::InvalidArgument(path + ": tensor '" + t.name + "' has shape " +
                                     ShapeString(t.shape) + " whose size overflows 64 bits");
    }
    header[t.name] = {
        {"dtype", StDTypeName(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, nbytes}}};
    offset = nbytes;
  }
  std::string text = header.dump();
  while ((text.size() + 8) % 8 != 0) text.push_back(' ');
  return text;
}

Status WriteSafetensors(const std::string& path, const std::vector<StTensorRef>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  Result<std::string> header = SafetensorsHeader(path, tensors, metadata);
  if (!header.ok()) return header.status();
  const std::string& text = *header;
  return WriteFileAtomic(path, [&](std::FILE* f) -> Status {
    const uint64_t n = text.size();
    if (std::fwrite(&n, 8, 1, f) != 1 || std::fwrite(text.data(), 1, n, f) != n) {
      return Status::Io(path + ": short write of the header");
    }
    for (const auto& t : tensors) {
      uint64_t numel = 0, nbytes = 0;
      SafetensorsShapeBytes(t.shape, StDTypeSize(t.dtype), &numel, &nbytes);  // checked above
      if (nbytes > 0 && std::fwrite(t.data, 1, nbytes, f) != nbytes) {
        return Status::Io(path + ": short write of tensor '" + t.name +
                          "': " + std::strerror(errno));
      }
    }
    return Status::Ok();
  });
}

}  // namespace baton
