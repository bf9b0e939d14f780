#include "orchestrator/store/series_values.h"

namespace baton {

namespace {

struct SeriesKeyInfo {
  SeriesKey key;
  const char* name;
  int rollup_slot;  // RollupSlot(); -1 = derived at query time
};

// The table: a key's name and its node slot. The slots are the stored node layout
// (kRollupLayout): changing one is a layout change.
constexpr SeriesKeyInfo kSeriesKeys[] = {
    {SeriesKey::kLr, "lr", 1},
    {SeriesKey::kExpectedLr, "expected_lr", -1},
    {SeriesKey::kLoss, "loss", 2},
    {SeriesKey::kLossVideo, "loss_video", 3},
    {SeriesKey::kLossAction, "loss_action", 4},
    {SeriesKey::kGradNorm, "grad_norm", 5},
    {SeriesKey::kTokensPerS, "tokens_per_s", 6},
    {SeriesKey::kStepTimeS, "step_time_s", 7},
    {SeriesKey::kPadding, "padding", 8},
    {SeriesKey::kTokens, "tokens", 9},
};

constexpr bool InKeyOrder() {
  for (int i = 0; i < int(sizeof(kSeriesKeys) / sizeof(kSeriesKeys[0])); ++i) {
    if (static_cast<int>(kSeriesKeys[i].key) != i) return false;
  }
  return true;
}
static_assert(InKeyOrder(), "kSeriesKeys is indexed by SeriesKey");

const SeriesKeyInfo& Info(SeriesKey key) { return kSeriesKeys[static_cast<int>(key)]; }

}  // namespace

double ExpectedSchedule::At(int64_t step) const { return Segment(0, 0).At(step); }

LrSchedule ExpectedSchedule::Segment(int64_t step0, int64_t resume_warmup) const {
  return LrSchedule{base_lr, warmup_steps, step0, resume_warmup};
}

const std::vector<SeriesKey>& SeriesKeys() {
  static const std::vector<SeriesKey> kKeys = [] {
    std::vector<SeriesKey> keys;
    for (const SeriesKeyInfo& k : kSeriesKeys) keys.push_back(k.key);
    return keys;
  }();
  return kKeys;
}

const char* SeriesKeyName(SeriesKey key) { return Info(key).name; }

std::optional<SeriesKey> ParseSeriesKey(const std::string& name) {
  for (const SeriesKeyInfo& k : kSeriesKeys) {
    if (name == k.name) return k.key;
  }
  return std::nullopt;
}

std::string SeriesKeyList() {
  std::string out;
  for (const SeriesKeyInfo& k : kSeriesKeys) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

int RollupSlot(SeriesKey key) { return Info(key).rollup_slot; }

double SeriesValue(SeriesKey key, const SeriesRow& r, const ExpectedSchedule& schedule) {
  switch (key) {
    case SeriesKey::kLr:
      return r.lr;
    case SeriesKey::kExpectedLr:
      return schedule.known ? schedule.At(r.step) : NAN;
    case SeriesKey::kLoss:
      return r.nonfinite ? NAN : r.loss;
    case SeriesKey::kLossVideo:
      return r.nonfinite ? NAN : r.loss_video;
    case SeriesKey::kLossAction:
      return r.nonfinite ? NAN : r.loss_action;
    case SeriesKey::kGradNorm:
      return r.nonfinite ? NAN : r.grad_norm;
    case SeriesKey::kTokensPerS:
      return r.tokens_per_s;
    case SeriesKey::kStepTimeS:
      return r.step_time_s;
    case SeriesKey::kPadding: {
      const int64_t all = r.tokens + r.padded_tokens;
      return all > 0 ? double(r.padded_tokens) / double(all) : NAN;
    }
    case SeriesKey::kTokens:
      return double(r.tokens);
  }
  return NAN;
}

}  // namespace baton
