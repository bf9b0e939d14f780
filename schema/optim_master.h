// optim.master: where the float32 master weights live (docs/trainer.md, "Sharding").
//
// replicated: every rank holds the whole master (today's layout: the model's parameters are the
// master, and bf16 runs cast them under autocast). sharded: the master of each parameter lives
// only on the rank that owns its AdamW state (optim.shard's plan); in bf16 runs every rank
// computes with bf16 copies of the matmul weights and keeps float32 gradients. The vocabulary
// and its words; the config reader owns the checks between keys. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace baton {

enum class OptimMaster { kReplicated, kSharded };

inline const char* OptimMasterName(OptimMaster m) {
  return m == OptimMaster::kSharded ? "sharded" : "replicated";
}

inline std::optional<OptimMaster> ParseOptimMaster(std::string_view text) {
  if (text == "replicated") return OptimMaster::kReplicated;
  if (text == "sharded") return OptimMaster::kSharded;
  return std::nullopt;
}

}  // namespace baton
