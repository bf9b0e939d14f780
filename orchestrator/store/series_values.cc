#include "orchestrator/store/series_values.h"

#include <iterator>

#include "schema/padding_waste.h"

namespace baton {

namespace {

constexpr size_t kSeriesKeyCount = std::size(Vocabulary<SeriesKey>::kWords);

constexpr bool InKeyOrder() {
  for (size_t i = 0; i < kSeriesKeyCount; ++i) {
    if (static_cast<size_t>(Vocabulary<SeriesKey>::kWords[i].value) != i) return false;
  }
  return true;
}
static_assert(InKeyOrder(),
              "Vocabulary<SeriesKey> is in enum order: kRollupSlots is indexed by it");

// Each key's node slot, by SeriesKey (-1 = derived at query time). The slots are the stored
// node layout (kRollupLayout): changing one is a layout change.
constexpr int kRollupSlots[] = {/*lr=*/1,           /*expected_lr=*/-1, /*loss=*/2,
                                /*loss_video=*/3,   /*loss_action=*/4,  /*grad_norm=*/5,
                                /*tokens_per_s=*/6, /*step_time_s=*/7,  /*padding=*/8,
                                /*tokens=*/9};
static_assert(std::size(kRollupSlots) == kSeriesKeyCount, "one node slot per series key");

}  // namespace

double ExpectedSchedule::At(int64_t step) const { return Segment(0, 0).At(step); }

LrSchedule ExpectedSchedule::Segment(int64_t step0, int64_t resume_warmup) const {
  return LrSchedule{base_lr, warmup_steps, step0, resume_warmup};
}

const std::vector<SeriesKey>& SeriesKeys() {
  static const std::vector<SeriesKey> kKeys = [] {
    std::vector<SeriesKey> keys;
    for (const Word<SeriesKey>& w : Vocabulary<SeriesKey>::kWords) keys.push_back(w.value);
    return keys;
  }();
  return kKeys;
}

int RollupSlot(SeriesKey key) { return kRollupSlots[static_cast<size_t>(key)]; }

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
    case SeriesKey::kPadding:
      return PaddingWaste(double(r.tokens), double(r.padded_tokens));
    case SeriesKey::kTokens:
      return double(r.tokens);
  }
  return NAN;
}

}  // namespace baton
