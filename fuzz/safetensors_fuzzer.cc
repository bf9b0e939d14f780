// libFuzzer target: the safetensors reader (it maps a file, so the bytes go to a file first),
// then every tensor converted.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "schema/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/baton-fuzz-" + std::to_string(getpid()) + ".safetensors";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  auto st = baton::SafetensorsFile::Open(path);
  if (st.ok()) {
    for (const auto& t : (*st)->tensors()) {
      // Tensors of more than 8 MiB are valid but not worth converting here.
      if (t.end - t.begin > (uint64_t(8) << 20)) continue;
      auto v = (*st)->ReadFloat64(t.name);
      if (!v.ok() || v->size() != size_t(t.numel())) __builtin_trap();
    }
  }
  return 0;
}
