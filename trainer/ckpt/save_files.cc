#include "trainer/ckpt/save_files.h"

#include <xxhash.h>

#include <cstdio>

#include "schema/atomic_file.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

nlohmann::json ManifestEntry(const std::string& rel, const FileDigest& d) {
  return nlohmann::json{{"path", rel}, {"bytes", d.bytes}, {"xxh3", d.xxh3}};
}

nlohmann::json WriteSmall(const fs::path& dir, const std::string& rel, const std::string& text) {
  BATON_CHECK_OK(WriteTextAtomic((dir / rel).string(), text), "check disk space");
  return ManifestEntry(rel, {text.size(), Xxh3Hex(XXH3_64bits(text.data(), text.size()))});
}

std::vector<ExportShard> PlanExport(const std::vector<int64_t>& owner,
                                    const std::vector<int64_t>& bytes, int64_t world,
                                    int64_t max_shard_bytes) {
  std::vector<ExportShard> shards;
  for (int64_t r = 0; r < world; ++r) {
    int64_t current = 0;
    bool open = false;
    for (size_t i = 0; i < owner.size(); ++i) {
      if (owner[i] != r) continue;
      if (!open || (current + bytes[i] > max_shard_bytes && !shards.back().params.empty())) {
        shards.push_back({"", r, {}});
        current = 0;
        open = true;
      }
      shards.back().params.push_back(i);
      current += bytes[i];
    }
  }
  const size_t n = shards.size();
  for (size_t i = 0; i < n; ++i) {
    char name[96];
    if (n == 1) {
      std::snprintf(name, sizeof name, "diffusion_pytorch_model.safetensors");
    } else {
      std::snprintf(name, sizeof name, "diffusion_pytorch_model-%05zu-of-%05zu.safetensors", i + 1,
                    n);
    }
    shards[i].file = name;
  }
  return shards;
}

}  // namespace baton
