// Padding waste, the one formula for it: the share of a padded batch that is padding,
// padding / (valid + padding). A step's figure counts tokens (the record's `tokens`, valid, and
// `padded_tokens`, the tokens of padding frames): the trainer's progress line, the store's
// `padding` series, the API's `padding_waste` and the run page all show this. The sampler's
// plan-time estimate (sampler-stats) knows no tokens and counts frames, with the same formula.
// Header-only, torch-free; no state.
#pragma once

#include <cmath>

namespace baton {

// NaN for an empty batch: no figure, which a chart leaves as a gap.
inline double PaddingWaste(double valid, double padding) {
  const double all = valid + padding;
  return all > 0 ? padding / all : std::nan("");
}

}  // namespace baton
