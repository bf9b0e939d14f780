#include "orchestrator/store/series_rollup_node.h"

#include <cstring>
#include <type_traits>

namespace baton {

static_assert(std::is_trivially_copyable_v<RollupNode>, "nodes are stored as their bytes");

RollupNode NodeOfRow(const SeriesRow& r) {
  RollupNode n;
  n.rows = 1;
  n.warmup_rows = r.in_warmup ? 1 : 0;
  n.nonfinite_rows = r.nonfinite ? 1 : 0;
  n.tokens = r.tokens;
  n.padded_tokens = r.padded_tokens;
  n.step_time_s = std::isnan(r.step_time_s) ? 0.0 : r.step_time_s;
  n.min_time = n.max_time = r.time;
  const RollupPoint row{r.step, 0.0, r.time, r.tokens};
  n.key[0] = RollupKeyStats{1, row, row, row, row};
  for (SeriesKey k : SeriesKeys()) {
    const int slot = RollupSlot(k);
    if (slot < 0) continue;
    const double v = SeriesValue(k, r, ExpectedSchedule{});
    if (std::isnan(v)) continue;
    const RollupPoint p{r.step, v, r.time, r.tokens};
    n.key[slot] = RollupKeyStats{1, p, p, p, p};
  }
  return n;
}

void AppendKeyStats(RollupKeyStats* acc, int64_t acc_tokens, const RollupKeyStats& next) {
  if (next.count == 0) return;
  auto shifted = [acc_tokens](RollupPoint p) {
    p.tokens_through += acc_tokens;
    return p;
  };
  if (acc->count == 0) {
    *acc = RollupKeyStats{next.count, shifted(next.first), shifted(next.last), shifted(next.min),
                          shifted(next.max)};
    return;
  }
  acc->count += next.count;
  acc->last = shifted(next.last);
  // Strictly smaller/larger only: on ties the earlier row stays (the downsampler's rule).
  if (next.min.value < acc->min.value) acc->min = shifted(next.min);
  if (next.max.value > acc->max.value) acc->max = shifted(next.max);
}

void AppendNode(RollupNode* acc, const RollupNode& next) {
  if (next.rows == 0) return;
  for (int k = 0; k < kRollupKeys; ++k) AppendKeyStats(&acc->key[k], acc->tokens, next.key[k]);
  acc->rows += next.rows;
  acc->warmup_rows += next.warmup_rows;
  acc->nonfinite_rows += next.nonfinite_rows;
  acc->tokens += next.tokens;
  acc->padded_tokens += next.padded_tokens;
  acc->step_time_s += next.step_time_s;
  acc->min_time = std::min(acc->min_time, next.min_time);
  acc->max_time = std::max(acc->max_time, next.max_time);
}

std::string EncodeNode(const RollupNode& n) {
  std::string out(sizeof(RollupNode), '\0');
  std::memcpy(out.data(), &n, sizeof(RollupNode));
  return out;
}

bool DecodeNode(const void* data, size_t size, RollupNode* out) {
  if (data == nullptr || size != sizeof(RollupNode)) return false;
  std::memcpy(out, data, sizeof(RollupNode));
  return true;
}

}  // namespace baton
