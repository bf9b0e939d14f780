// The parts of a checkpoint save that need no tensors (checkpoint_save.cc holds the rest): the
// plan of the transformer/ export's files — which rank writes which parameters, under which of
// diffusers' names — a written file's manifest entry, and the small files rank 0 writes whole
// (config.json, the indexes, trainer_state.json). Stateless functions; thread-safe on distinct
// files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/ckpt/tensor_file_io.h"

namespace baton {

// The transformer/ export's files: per rank, the parameters it owns in the model's order, cut
// where the next one would pass `max_shard_bytes` (diffusers' rule within each rank), numbered
// across all ranks. One file in all keeps upstream's single name and needs no index.
struct ExportShard {
  std::string file;  // relative to transformer/
  int64_t rank = 0;
  std::vector<size_t> params;
};

// `owner` and `bytes`: per parameter in the model's order, its writing rank and its size in the
// export dtype.
std::vector<ExportShard> PlanExport(const std::vector<int64_t>& owner,
                                    const std::vector<int64_t>& bytes, int64_t world,
                                    int64_t max_shard_bytes);

// One written file, as the manifest lists it.
nlohmann::json ManifestEntry(const std::string& rel, const FileDigest& d);

// A small file rank 0 writes whole: atomically, hashed from the text itself. Returns its
// manifest entry.
nlohmann::json WriteSmall(const std::filesystem::path& dir, const std::string& rel,
                          const std::string& text);

}  // namespace baton
