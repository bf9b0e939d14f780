// Series rollup nodes: the min/max summary of a run of consecutive effective step rows of one
// attempt, as stored in step_rollups.data (docs/store.md) and merged by the series endpoint.
//
// A node summarises rows in step order: its row count and sums, and for every series key the
// number of rows with a value and the first, last, minimum and maximum of those points (the
// earliest row on ties, as the min/max downsampler keeps them). Two nodes of adjacent step
// ranges merge into the node of the union (Append), so a cell of any width is the merge of
// stored nodes plus a few rows at its edges. Pure value types and functions; thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "orchestrator/store/series_values.h"

namespace baton {

// The keys a node summarises, by slot: slot 0 counts every row (its points carry no value) and
// gives the first and last row of the node; slots 1.. are the stored series keys
// (RollupSlot(), series_values.h). expected_lr is a function of the step and is derived from
// slot 0 at query time.
inline constexpr int kRollupKeys = 10;
// Bumped whenever the node layout or a key's value rule changes: runs written with another
// layout are rebuilt by ingest and read from their rows until then.
inline constexpr int64_t kRollupLayout = 1;

// Blocks: level l covers steps [b · 64 · 16^l, (b + 1) · 64 · 16^l).
inline constexpr int kRollupLevels = 4;
inline constexpr int kRollupFanoutBits = 4;  // 16 children per node
inline constexpr int kRollupLeafBits = 6;    // 64 steps per level-0 block
inline int64_t RollupBlockOf(int64_t step, int level) {
  return step >> (kRollupLeafBits + kRollupFanoutBits * level);
}
inline int64_t RollupBlockFirstStep(int64_t block, int level) {
  return block << (kRollupLeafBits + kRollupFanoutBits * level);
}

// The attempt_id column of a node: the attempt's id for its effective rows, minus it for its
// superseded rows (their nodes give the run page's per-attempt redone figures without a scan;
// the series reader never merges them).
inline int64_t RollupNodeOwner(int64_t attempt_id, bool superseded) {
  return superseded ? -attempt_id : attempt_id;
}

// One kept point: its step, value, time and the tokens of the node's rows up to and including it
// (so a reader adds the tokens before the node to get "tokens seen").
struct RollupPoint {
  int64_t step = 0;
  double value = 0;
  double time = 0;
  int64_t tokens_through = 0;
};

struct RollupKeyStats {
  int64_t count = 0;  // rows with a value; the points below are meaningful only when > 0
  RollupPoint first, last, min, max;
};

struct RollupNode {
  int64_t rows = 0;
  int64_t warmup_rows = 0;
  int64_t nonfinite_rows = 0;
  int64_t tokens = 0;
  int64_t padded_tokens = 0;
  double step_time_s = 0;  // summed over rows that have one
  double min_time = INFINITY, max_time = -INFINITY;
  RollupKeyStats key[kRollupKeys];

  const RollupKeyStats& row() const { return key[0]; }
  int64_t first_step() const { return key[0].first.step; }
  int64_t last_step() const { return key[0].last.step; }
};

// A row's node: every stored key's value by the one value rule (SeriesValue).
RollupNode NodeOfRow(const SeriesRow& r);
// Merges `next`, whose rows all come after this node's, into `acc`.
void AppendNode(RollupNode* acc, const RollupNode& next);
// Merges one key only (the series reader's cells).
void AppendKeyStats(RollupKeyStats* acc, int64_t acc_tokens, const RollupKeyStats& next);

// Fixed-layout bytes (this machine's byte order: the database never leaves the host it was
// written on for another architecture in practice; a size mismatch is reported as an error).
std::string EncodeNode(const RollupNode& n);
bool DecodeNode(const void* data, size_t size, RollupNode* out);

}  // namespace baton
