// MemoryPlan: the bytes one rank of a run holds at its peak, by category, computed from the model
// sizes, the longest packed row and the run's settings — before the run starts, so `baton
// submit` can refuse a run that cannot fit (docs/trainer.md, "Memory plan").
//
// Categories: weights (every parameter, master dtype), gradients (the full local accumulation
// buffer: every trainable parameter, master dtype, in every optim.shard mode), optimizer state
// (exp_avg + exp_avg_sq: all trainable parameters, or the largest rank's share of the ShardPlan),
// collective buffers (the flattened buckets of the step's reductions), autocast weight copies
// (bf16 runs), checkpoint snapshot (checkpoint.async's host copy of the rank's share of the state;
// on CPU in the same memory, on CUDA host memory beside the device total), activations (what
// autograd keeps for the longest row, counted tensor by tensor from the model's forward, plus the
// row's inputs and layout tensors and the backward's largest working set), and the runtime
// (libtorch's own resident memory on CPU, measured by the caller; the CUDA context on a GPU).
// Torch-free, pure functions; thread-safe.
//
// Bounded: the caller range-checks every size (PlanSizeLimits), PlanRowAttention refuses a row
// whose layout would exceed kMaxPlanLayoutEntries before it builds one, and every byte count is
// summed in checked arithmetic (`overflow` instead of a wrapped, negative total).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"
#include "schema/vocabularies.h"
#include "trainer/model/packed_layout.h"

namespace baton {

// The model's sizes (ModelDims without torch) and the data's per-episode sizes.
struct PlanModel {
  int64_t channels = 4, patch = 2, action_dim = 8, text_dim = 16;
  int64_t dim = 64, heads = 4, layers = 2, ffn_dim = 256, freq_dim = 256;
};

struct PlanParameter {
  std::string name;
  int64_t numel = 0;
  bool trainable = true;
  std::vector<int64_t> shape;  // as the model holds it (its product is numel)
};

// The largest size the plan takes of each input, whatever its source (run config, config.json,
// dataset, flags): the run config's own limits where it has one (docs/run_config.md), so every
// run that can be configured can be planned.
struct PlanSizeLimits {
  static constexpr int64_t kDim = int64_t(1) << 16, kHeads = 1024, kLayers = 1024;
  static constexpr int64_t kFfnDim = int64_t(1) << 20, kFreqDim = int64_t(1) << 16, kPatch = 64;
  static constexpr int64_t kChannels = int64_t(1) << 16;  // latent, action and text channels
  static constexpr int64_t kFrames = int64_t(1) << 20;    // latent frames of one episode
  static constexpr int64_t kPixels = int64_t(1) << 16;    // latent height or width
  static constexpr int64_t kActionSteps = int64_t(1) << 12, kTextLen = int64_t(1) << 20;
  static constexpr int64_t kWorld = int64_t(1) << 20;  // ranks
};

// Index entries (tokens, query and key slots) one layout of the planned row may hold while it is
// planned: 128 Mi, about 1 GiB. A row beyond that has billions of attention key slots, each a
// dim-wide vector per layer: far beyond any device. And the entries of every chunk setting tried
// together (each is one layout): a few seconds of work. Refusing more keeps `plan-memory` (and
// `baton submit`, which runs it) quick and small whatever the sizes say.
inline constexpr int64_t kMaxPlanLayoutEntries = int64_t(1) << 27;
inline constexpr int64_t kMaxPlanWorkEntries = int64_t(1) << 30;

// Whether optim.master sharded gives a parameter a bf16 compute copy in a bf16 run: the weights
// and biases of the linears, except the input projections (called twice per forward), the
// biases added after a 3-D matmul, and the norm weights and scale-shift tables (float32 ops).
// The trainer decides the same from the modules (MatmulParameters, trainer/train/train_step.h);
// a test holds the two together.
bool HoldsBf16Copy(const PlanParameter& p);

// Every parameter of VideoActionModel in the order named_parameters() gives them (a module's own
// parameters before its children's), with `trainable` false for the frozen
// condition_embedder_action.text_embedder.*. 29 + 27 * layers entries.
std::vector<PlanParameter> ModelParameters(const PlanModel& m);

// The longest packed row, and its self-attention work (the worst over the chunk sizes the
// objective may draw, at the largest window).
struct PlanRow {
  int64_t batch = 0, padded_frames = 0;    // B, Fp
  int64_t height = 0, width = 0;           // latent pixels
  int64_t action_steps = 0, text_len = 0;  // N, L
  int64_t tokens = 0, valid_tokens = 0;    // T, tokens of valid frames
  int64_t key_slots = 0;                   // sum over query groups of lk (gathered keys)
  int64_t computed_pairs = 0;              // score entries, padding included
  // The largest self-attention call blocks+attention recomputes (a bucket split under
  // kRecomputeCallEntries): its score entries per head, and its gathered query + key + value
  // slots (groups x (lq + 2 lk)).
  int64_t call_pairs = 0, call_slots = 0;
  int64_t chunk = 1, window = 0;  // the draw that gives the most attention work
};

// Fills tokens, valid_tokens, key_slots, computed_pairs, chunk and window of `row` for episodes
// of `frames` latent frames each (one entry per episode of the row), trying every chunk in
// [chunk_min, chunk_max] at window_max and keeping the one with the most attention bytes (and,
// for call_pairs, the largest recomputed call of any of them; `heads` sets that split).
// `row.batch`, `padded_frames`, `height`, `width`, `action_steps` must be set, each within
// PlanSizeLimits. Before any layout is built, an upper bound of its index entries is checked
// against kMaxPlanLayoutEntries: kInvalidArgument naming the row's sizes when it is over (or
// overflows); the caller names the source of the row. Chunks above the longest episode give the
// same layout as the longest episode's length and are not built again.
[[nodiscard]] Status PlanRowAttention(PlanRow* row, const std::vector<int64_t>& frames,
                                      int64_t patch, int64_t head_dim, int64_t chunk_min,
                                      int64_t chunk_max, int64_t window_max, int64_t heads);

struct PlanSettings {
  DType dtype = DType::kFloat32;
  bool cuda = false;
  ShardMode shard = ShardMode::kNone;
  ActivationCheckpointing checkpointing = ActivationCheckpointing::kNone;  // the total's
  int64_t world = 1;
  int64_t prefetch = 2;             // data.prefetch: rows read ahead
  int64_t bucket_bytes = 25 << 20;  // the process group's bucket size
  int64_t runtime_bytes = 0;        // libtorch's resident baseline (CPU) / CUDA context
  // checkpoint.async: a periodic save holds a host copy of this rank's share of the state
  // (snapshot_fit.h); export_dtype is checkpoint.export_dtype.
  bool async_checkpoint = false;
  ExportDType export_dtype = ExportDType::kFp32;
  // optim.master sharded: in bf16 runs every rank holds bf16 compute copies of the parameters
  // that have one (HoldsBf16Copy) instead of their fp32 master, and the fp32 master of only the
  // parameters it owns. float32 / float64 runs compute on the master itself: nothing changes.
  OptimMaster master = OptimMaster::kReplicated;
  // Resident bytes per live activation byte the allocator holds at the peak (see kCpuHeapFactor).
  double heap_factor = 1.0;
};

// On CPU the C library's malloc keeps the holes the forward's temporaries leave between the saved
// tensors (memory freed in the middle of its heap is not handed back), so the resident peak of a
// training process exceeds its live activation bytes: 1.3-2.1x on the small models of
// docs/trainer.md ("Memory plan"), less as tensors grow. 1.5 keeps the plan within +-20 % of the
// measured peak there. CUDA plans use 1.0: the caching allocator's fragmentation is not modelled
// (the runtime allowance covers its slack).
inline constexpr double kCpuHeapFactor = 1.5;

// Activation bytes of one row, split so every checkpointing setting can be shown.
struct ActivationBytes {
  int64_t per_block = 0;       // what autograd keeps for one transformer block
  int64_t outside_blocks = 0;  // embeddings, time MLPs, output head
  int64_t block_inputs = 0;    // per block, the inputs a recomputed block keeps (blocks mode)
  int64_t inputs = 0;          // the row's tensors and layout tensors (times the rows in flight)
  int64_t working = 0;         // the backward's largest transient set
  // blocks+attention: one block without its self-attention scores (but with the head-major q, k,
  // v the recomputed calls keep), the one call being recomputed (its scores, their gradients, its
  // gathered keys and the input gradients it hands on), and the backward's transient set: that
  // call or the cross-attention's / FFN's gradients, whichever is larger.
  int64_t per_block_attention = 0, attention_call = 0, working_attention = 0;
  int64_t none = 0;              // total with activation_checkpointing none
  int64_t blocks = 0;            // total with activation_checkpointing blocks
  int64_t blocks_attention = 0;  // total with activation_checkpointing blocks+attention
  bool overflow = false;         // a count exceeded int64: the figures above are meaningless
};

ActivationBytes PlanActivations(const PlanModel& m, const PlanRow& row, const PlanSettings& s);

struct MemoryPlan {
  int64_t parameters = 0, trainable = 0;
  int64_t master_bytes = 4;  // bytes per element of the master dtype
  int64_t weights = 0;
  int64_t gradients = 0;        // peak: the full accumulation buffer
  int64_t gradients_held = 0;   // between steps (gradients mode: only the rank's share)
  int64_t optimizer = 0;        // exp_avg + exp_avg_sq of the largest rank
  int64_t optimizer_share = 0;  // elements of that rank's share
  int64_t collective_buffers = 0;
  int64_t autocast_copies = 0;  // bf16 copies of the weights autocast keeps
  // optim.master sharded in bf16: `weights` is then the compute copies (bf16 where the parameter
  // has one, master dtype for the rest), and this the largest rank's fp32 master of what it owns.
  int64_t master_share = 0;
  int64_t bf16_copied = 0;       // elements with a bf16 compute copy (master sharded, bf16)
  ActivationBytes activations;   // live bytes
  int64_t activations_used = 0;  // the configured setting's live bytes
  int64_t heap_overhead = 0;     // (heap_factor - 1) x activations_used
  int64_t heap_overhead_none = 0, heap_overhead_blocks = 0, heap_overhead_blocks_attention = 0;
  int64_t runtime = 0;
  // checkpoint.async's host snapshot: the largest rank's AdamW moments (its ShardPlan share, as a
  // save writes only what it owns, sharded or not) and step counts, and its weights in the export
  // dtype plus, when that is not the master dtype, in the master dtype; the frozen parameters
  // (written by turn) counted whole. Host memory: part of the total on CPU, beside it on CUDA.
  int64_t checkpoint_snapshot = 0;
  int64_t total = 0;  // everything above, with the configured checkpointing
  int64_t total_none = 0, total_blocks = 0, total_blocks_attention = 0;
  // A byte count exceeded int64 (more than 8 EiB: nothing fits). The figures are then not to be
  // shown; the caller reports an error instead.
  bool overflow = false;
};

MemoryPlan MakeMemoryPlan(const PlanModel& m, const PlanRow& row, const PlanSettings& s);

}  // namespace baton
