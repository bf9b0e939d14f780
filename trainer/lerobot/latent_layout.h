// LayoutLatents: upstream's camera stacking (`_cat_video_latents`): each camera's [F*h*w, C]
// latent viewed as [F, h, w, C]; robotwin_tshape puts the wrists side by side along w on top of
// the first camera, any other layout puts every camera side by side along w; the result is
// permuted to [C, F, H, W]. Bytes are moved, never converted, so latents stay exact. Torch-free.
#pragma once

#include <vector>

#include "trainer/lerobot/action_transform.h"
#include "trainer/lerobot/import_profile.h"
#include "trainer/lerobot/pth_segment.h"

namespace baton {

// cams[k] is obs_cam_keys[k]'s file. On a failed check returns false with *failed set
// (camera_frames_disagree, layout_mismatch, latent_shape).
bool LayoutLatents(const ImportProfile& p, const std::vector<PthSegment>& cams, RawTensor* out,
                   SegmentCheck* failed);

}  // namespace baton
