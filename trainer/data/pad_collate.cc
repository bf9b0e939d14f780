#include "trainer/data/pad_collate.h"

#include <algorithm>

#include "schema/exit_codes.h"
#include "trainer/fail.h"

namespace baton {

PaddedBatch PadCollate(const std::vector<EpisodeData>& episodes, int64_t pad_multiple) {
  if (episodes.empty())
    BATON_FAIL(kExitInternal, "pad_collate: empty batch",
               "a batch plan handed out no episodes; this is a bug, please report it");
  if (pad_multiple < 1) {
    BATON_FAIL(kExitConfig, "pad_collate: pad_multiple " + std::to_string(pad_multiple) + " < 1",
               "set data.pad_multiple >= 1");
  }
  const DatasetShape& s = episodes[0].shape;
  int64_t max_f = 0;
  for (const auto& e : episodes) {
    if (!(e.shape == s)) {
      BATON_FAIL(kExitData,
                 "pad_collate: episode " + std::to_string(e.index) + " has sizes " +
                     e.shape.ToString() + ", the batch has " + s.ToString(),
                 "every episode of a dataset must share C, H, W, A, N, L and Dt");
    }
    max_f = std::max(max_f, e.frames);
  }
  const int64_t B = static_cast<int64_t>(episodes.size());
  const int64_t Fp = (max_f + pad_multiple - 1) / pad_multiple * pad_multiple;

  PaddedBatch out;
  out.padded_frames = Fp;
  out.latents = torch::zeros({B, s.channels, Fp, s.height, s.width});
  out.actions = torch::zeros({B, s.action_dim, Fp, s.action_steps});
  out.actions_mask = torch::zeros({B, s.action_dim, Fp, s.action_steps});
  out.text = torch::empty({B, s.text_len, s.text_dim});
  out.valid_frames = torch::empty({B}, torch::kInt64);
  auto valid = out.valid_frames.accessor<int64_t, 1>();

  for (int64_t b = 0; b < B; ++b) {
    const EpisodeData& e = episodes[static_cast<size_t>(b)];
    const int64_t F = e.frames;
    auto view = [](const std::vector<float>& v, std::vector<int64_t> shape) {
      return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32);
    };
    using torch::indexing::Slice;
    out.latents[b].index_put_({Slice(), Slice(0, F)},
                              view(e.latents, {s.channels, F, s.height, s.width}));
    out.actions[b].index_put_({Slice(), Slice(0, F)},
                              view(e.actions, {s.action_dim, F, s.action_steps}));
    out.actions_mask[b].index_put_({Slice(), Slice(0, F)},
                                   view(e.actions_mask, {s.action_dim, F, s.action_steps}));
    out.text[b].copy_(view(e.text, {s.text_len, s.text_dim}));
    valid[b] = F;
    out.episodes.push_back(e.index);
  }
  return out;
}

}  // namespace baton
