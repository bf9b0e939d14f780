#include "trainer/tools/plan_memory_text.h"

#include <cstdio>
#include <string>
#include <vector>

namespace baton {

namespace {

std::string Gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(int64_t(1) << 30));
  return buf;
}

void Line(const std::string& what, int64_t bytes, const std::string& note = "") {
  std::printf("%-33s %14lld B  %11s%s\n", what.c_str(), (long long)bytes, Gib(bytes).c_str(),
              note.c_str());
}

}  // namespace

void PrintMemoryPlanText(const MemoryPlanReport& r, int64_t dim, int64_t layers) {
  const bool cuda = r.device == Device::kCuda;
  const MemoryPlanReport::Bytes& b = r.bytes;
  std::printf("memory plan of %s: %lld rank(s), %s on %s, optim.shard %s\n", r.config.c_str(),
              (long long)r.world_size, Name(r.dtype), Name(r.device), Name(r.shard));
  std::printf("model             %lld parameters (%lld trainable), D %lld, %lld layers\n",
              (long long)r.parameters.total, (long long)r.parameters.trainable, (long long)dim,
              (long long)layers);
  std::printf(
      "longest row       %lld tokens: %lld episode(s) x %lld frames (%s), chunk %lld, "
      "window %lld\n",
      (long long)r.row.tokens, (long long)r.row.batch, (long long)r.row.padded_frames,
      r.row.source.c_str(), (long long)r.row.chunk, (long long)r.row.window);
  if (b.master_share > 0) {
    Line("weights (bf16 compute copies)", b.weights);
    Line("master weights (owned share)", b.master_share);
  } else {
    Line("weights", b.weights);
  }
  Line("gradients", b.gradients,
       b.gradients_held != b.gradients ? "  (held between steps: " + Gib(b.gradients_held) + ")"
                                       : "");
  Line("optimizer state", b.optimizer);
  Line("collective buffers", b.collective_buffers);
  if (b.autocast_copies > 0) Line("autocast bf16 weight copies", b.autocast_copies);
  // The configured setting's figure, then the other two's.
  struct Setting {
    ActivationCheckpointing setting;
    int64_t activations, total;
  };
  const std::vector<Setting> settings = {
      {ActivationCheckpointing::kNone, r.activations.none, r.total_by_checkpointing.none},
      {ActivationCheckpointing::kBlocks, r.activations.blocks, r.total_by_checkpointing.blocks},
      {ActivationCheckpointing::kBlocksAttention, r.activations.blocks_attention,
       r.total_by_checkpointing.blocks_attention}};
  const ActivationCheckpointing used = r.activation_checkpointing;
  Line(std::string("activations (") + Name(used) + ")", b.activations);
  for (const Setting& o : settings) {
    if (o.setting != used) {
      Line(std::string("  (with ") + Name(o.setting) + " instead)", o.activations);
    }
  }
  if (b.heap_overhead > 0) {
    char note[64];
    std::snprintf(note, sizeof note, "  (x%.2f of the activations)", r.heap_factor - 1.0);
    Line("CPU heap overhead", b.heap_overhead, note);
  }
  Line(cuda ? "runtime (CUDA allowance)" : "runtime (libtorch, measured)", b.runtime);
  if (b.checkpoint_snapshot > 0) {
    Line(cuda ? "checkpoint snapshot (host)" : "checkpoint snapshot", b.checkpoint_snapshot,
         cuda ? "  (host memory, not in the device total)" : "");
  }
  Line("total per rank", b.total);
  Line("checkpoint, largest rank", r.checkpoint.bytes_per_rank_max,
       "  (" + Gib(r.checkpoint.bytes_total) + " in all, written by " +
           std::to_string(r.world_size) + " rank(s))");
  Line("checkpoint on disk", r.checkpoint.disk_bytes,
       "  (" + std::to_string(r.checkpoint.disk_files) + " files, headers and manifest included)");
  for (const Setting& o : settings) {
    if (o.setting != used) Line(std::string("  (total with ") + Name(o.setting) + ")", o.total);
  }
  if (r.limit) {
    std::printf("limit             %s: %g GiB -> %s\n", r.limit->key.c_str(), r.limit->gb,
                b.total <= r.limit->bytes ? "fits" : "DOES NOT FIT");
  } else {
    std::printf("limit             none (%s is 0)\n", MemoryLimitKey(r.device));
  }
}

}  // namespace baton
