#include "orchestrator/store/series_rollup_node.h"

#include <cstring>
#include <type_traits>

namespace baton {

static_assert(std::is_trivially_copyable_v<RollupNode>, "nodes are stored as their bytes");

double RollupValue(RollupKey key, const RollupRow& r) {
  switch (key) {
    case RollupKey::kRow:
      return 0.0;
    case RollupKey::kLr:
      return r.lr;
    case RollupKey::kLoss:
      return r.nonfinite ? NAN : r.loss;
    case RollupKey::kLossVideo:
      return r.nonfinite ? NAN : r.loss_video;
    case RollupKey::kLossAction:
      return r.nonfinite ? NAN : r.loss_action;
    case RollupKey::kGradNorm:
      return r.nonfinite ? NAN : r.grad_norm;
    case RollupKey::kTokensPerS:
      return r.tokens_per_s;
    case RollupKey::kStepTimeS:
      return r.step_time_s;
    case RollupKey::kPadding: {
      const int64_t all = r.tokens + r.padded_tokens;
      return all > 0 ? double(r.padded_tokens) / double(all) : NAN;
    }
    case RollupKey::kTokens:
      return double(r.tokens);
  }
  return NAN;
}

RollupNode NodeOfRow(const RollupRow& r) {
  RollupNode n;
  n.rows = 1;
  n.warmup_rows = r.in_warmup ? 1 : 0;
  n.nonfinite_rows = r.nonfinite ? 1 : 0;
  n.tokens = r.tokens;
  n.padded_tokens = r.padded_tokens;
  n.step_time_s = std::isnan(r.step_time_s) ? 0.0 : r.step_time_s;
  n.min_time = n.max_time = r.time;
  for (int k = 0; k < kRollupKeys; ++k) {
    const double v = RollupValue(static_cast<RollupKey>(k), r);
    if (std::isnan(v)) continue;
    const RollupPoint p{r.step, v, r.time, r.tokens};
    n.key[k] = RollupKeyStats{1, p, p, p, p};
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
