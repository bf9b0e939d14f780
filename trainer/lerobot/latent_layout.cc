#include "trainer/lerobot/latent_layout.h"

#include <cstring>

namespace baton {

namespace {

// Every camera's latent is [F*h*w, C] with the first camera's F, C and dtype.
bool CheckCameraLatents(const ImportProfile& p, const std::vector<PthSegment>& cams,
                        SegmentCheck* failed) {
  const PthSegment& c0 = cams.front();
  const int64_t F = c0.latent_num_frames, C = c0.latent.shape[1];
  for (size_t k = 0; k < cams.size(); ++k) {
    const PthSegment& s = cams[k];
    const std::string cam = p.obs_cam_keys[k];
    int64_t fh = 0, fhw = 0;
    if (s.latent_num_frames < 1 || s.latent_height < 1 || s.latent_width < 1 ||
        __builtin_mul_overflow(s.latent_num_frames, s.latent_height, &fh) ||
        __builtin_mul_overflow(fh, s.latent_width, &fhw) || s.latent.shape[0] != fhw) {
      *failed = {"latent_shape", cam + ": latent " + ShapeString(s.latent.shape) +
                                     " is not F*h*w = " + std::to_string(s.latent_num_frames) +
                                     "*" + std::to_string(s.latent_height) + "*" +
                                     std::to_string(s.latent_width) + " rows"};
      return false;
    }
    if (s.latent_num_frames != F) {
      *failed = {"camera_frames_disagree", cam + " has " + std::to_string(s.latent_num_frames) +
                                               " latent frames, " + p.obs_cam_keys[0] + " has " +
                                               std::to_string(F)};
      return false;
    }
    if (s.latent.shape[1] != C || s.latent.dtype != c0.latent.dtype) {
      *failed = {"latent_shape", cam + ": channels or dtype differ from " + p.obs_cam_keys[0]};
      return false;
    }
  }
  return true;
}

// Where each camera goes in the canvas (row offset y0, column offset x0) and its size H x W.
struct CameraPlacement {
  std::vector<int64_t> y0, x0;
  int64_t H = 0, W = 0;
};

bool PlaceCameras(const ImportProfile& p, const std::vector<PthSegment>& cams, CameraPlacement* pl,
                  SegmentCheck* failed) {
  const PthSegment& c0 = cams.front();
  std::vector<int64_t>& y0 = pl->y0;
  std::vector<int64_t>& x0 = pl->x0;
  y0.assign(cams.size(), 0);
  x0.assign(cams.size(), 0);
  int64_t& H = pl->H;
  int64_t& W = pl->W;
  if (p.layout == CameraLayout::kRobotwinTShape) {
    const int64_t hw = cams[1].latent_height;
    int64_t x = 0;
    for (size_t k = 1; k < cams.size(); ++k) {
      if (cams[k].latent_height != hw) {
        *failed = {"layout_mismatch", "wrist cameras differ in latent height"};
        return false;
      }
      y0[k] = 0;
      x0[k] = x;
      x += cams[k].latent_width;
    }
    if (x != c0.latent_width) {
      *failed = {"layout_mismatch", "the wrists' total latent width " + std::to_string(x) +
                                        " differs from " + p.obs_cam_keys[0] + "'s " +
                                        std::to_string(c0.latent_width) + " (robotwin_tshape)"};
      return false;
    }
    y0[0] = hw;
    x0[0] = 0;
    H = hw + c0.latent_height;
    W = x;
  } else {
    for (size_t k = 0; k < cams.size(); ++k) {
      if (cams[k].latent_height != c0.latent_height) {
        *failed = {"layout_mismatch",
                   "cameras differ in latent height (concat_w needs one height)"};
        return false;
      }
      x0[k] = W;
      W += cams[k].latent_width;
    }
    H = c0.latent_height;
  }
  return true;
}

}  // namespace

bool LayoutLatents(const ImportProfile& p, const std::vector<PthSegment>& cams, RawTensor* out,
                   SegmentCheck* failed) {
  const PthSegment& c0 = cams.front();
  const int64_t F = c0.latent_num_frames, C = c0.latent.shape[1];
  if (!CheckCameraLatents(p, cams, failed)) return false;
  CameraPlacement pl;
  if (!PlaceCameras(p, cams, &pl, failed)) return false;
  const int64_t H = pl.H, W = pl.W;
  const std::vector<int64_t>& y0 = pl.y0;
  const std::vector<int64_t>& x0 = pl.x0;
  // The canvas holds exactly the cameras' elements (each h*w <= its rows), so it is bounded by
  // the bytes read; checked all the same.
  int64_t total = 0, canvas = 0;
  for (const auto& cam : cams) total += cam.latent.numel();
  if (__builtin_mul_overflow(C * F, H, &canvas) || __builtin_mul_overflow(canvas, W, &canvas) ||
      canvas != total) {
    *failed = {"layout_mismatch", "the canvas [" + std::to_string(C) + ", " + std::to_string(F) +
                                      ", " + std::to_string(H) + ", " + std::to_string(W) +
                                      "] does not hold the cameras' " + std::to_string(total) +
                                      " elements"};
    return false;
  }
  const size_t es = StDTypeSize(c0.latent.dtype);
  out->dtype = c0.latent.dtype;
  out->shape = {C, F, H, W};
  out->bytes.assign(size_t(C * F * H * W) * es, '\0');
  for (size_t k = 0; k < cams.size(); ++k) {
    const PthSegment& s = cams[k];
    const int64_t h = s.latent_height, w = s.latent_width;
    const char* src = s.latent.bytes.data();
    for (int64_t f = 0; f < F; ++f)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          for (int64_t c = 0; c < C; ++c) {
            const size_t from = size_t(((f * h + y) * w + x) * C + c) * es;
            const size_t to = size_t(((c * F + f) * H + (y + y0[k])) * W + (x + x0[k])) * es;
            std::memcpy(&out->bytes[to], src + from, es);
          }
  }
  return true;
}

}  // namespace baton
