// AttentionPlan: the block-sparse self-attention of a packed row as a few batched calls.
//
// The layout plans one query group per valid frame of each sample, with the keys that group can
// possibly see (packed_layout.h). Run sample by sample, that is one set of small ops per sample
// per layer, and packing B episodes into a row would not reduce the number of attention ops.
// This plan pools the query groups of every sample of the row and buckets them by their key
// count: each group of a bucket gets empty key slots up to the bucket's lk, and a bucket runs as
// one batched call per layer. The buckets minimise (padded score entries + a fixed cost per
// call), so the padding is counted in computed_pairs() and traded against the op count in the
// open. Torch-free and pure; built once per micro-step from the layout (attention.h turns it
// into index tensors shared by every layer and by the backward).
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/model/packed_layout.h"

namespace baton {

// One batched call: `groups` query groups of `lq` tokens, each with `lk` key slots.
struct AttentionBucket {
  int64_t groups = 0, lq = 0, lk = 0;
  std::vector<int64_t> queries;  // [groups * lq] token indices
  std::vector<int64_t> keys;     // [groups * lk] token indices, -1 = empty slot
  int64_t computed_pairs() const { return groups * lq * lk; }
};

struct AttentionPlan {
  std::vector<AttentionBucket> buckets;  // ordered by (lq, lk)
  int64_t calls() const { return static_cast<int64_t>(buckets.size()); }
  int64_t computed_pairs() const;  // score entries the buckets compute, padding included
};

// The default fixed cost of one batched call, in score entries: what one more call per layer
// (a dozen ops forward and backward) is worth in padding. A middle ground: on a CPU a call costs
// well under a millisecond and a score entry ~0.1-1 us (lower is better there); on a GPU a call
// is a dozen kernel launches and an entry nearly free (higher is better). A larger value gives
// fewer, more padded calls.
inline constexpr int64_t kAttentionCallCostPairs = 200000;

// train.activation_checkpointing: blocks+attention recomputes each self-attention call in the
// backward, one call at a time, so what the backward holds is one call's scores, not the layer's.
// It splits a bucket into calls of at most this many score entries over all heads (64 Mi: 256 MiB
// of float32 scores); the plan of `none` and `blocks` is not split.
inline constexpr int64_t kRecomputeCallEntries = int64_t(1) << 26;

// Groups per call when a bucket of `lq` x `lk` groups is split so that no call computes more than
// `max_entries` score entries over `heads` heads; at least 1 (a group is never split).
int64_t GroupsPerCall(int64_t heads, int64_t lq, int64_t lk, int64_t max_entries);

// Buckets every query group of the layout (all samples) by key count, choosing the bucket
// boundaries that minimise sum(padded pairs) + call_cost_pairs * calls. Queries keep their
// groups; keys keep their order, padded at the end with -1.
AttentionPlan PlanAttention(const PackedLayout& layout,
                            int64_t call_cost_pairs = kAttentionCallCostPairs);

}  // namespace baton
