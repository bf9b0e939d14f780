// The named checks of the LeRobot importer, one bad input each: the check's name is what the
// import report counts and what the error names.
#include <gtest/gtest.h>

#include "trainer/lerobot/action_transform.h"
#include "trainer/lerobot/latent_layout.h"

namespace baton {
namespace {

ImportProfile Robotwin() {
  ImportProfile p;
  p.layout = CameraLayout::kRobotwinTShape;
  p.obs_cam_keys = {"high", "left", "right"};
  p.used_action_channel_ids = {0, 1, 2, 3, 4, 5, 6, 28, 7, 8, 9, 10, 11, 12, 13, 29};
  p.action_per_frame = 16;
  p.relative_pose_columns = {0, 8};
  p.q01.assign(30, -1.0);
  p.q99.assign(30, 1.0);
  return p;
}

std::string FrameIdsCheck(const std::vector<int64_t>& ids, int64_t start, int64_t end) {
  int64_t F = 0, stride = 0;
  SegmentCheck c;
  return CheckFrameIds(Robotwin(), ids, start, end, &F, &stride, &c) ? "ok" : c.check;
}

TEST(LeRobotChecks, FrameIds) {
  EXPECT_EQ(FrameIdsCheck({0, 4, 8, 12, 16}, 0, 20), "ok");
  EXPECT_EQ(FrameIdsCheck({0}, 0, 20), "frame_ids_too_short");
  EXPECT_EQ(FrameIdsCheck({0, 4, 8, 12, 16}, 1, 20), "frame_ids_out_of_range");
  EXPECT_EQ(FrameIdsCheck({0, 4, 8, 12, 16}, 0, 16), "frame_ids_out_of_range");
  EXPECT_EQ(FrameIdsCheck({0, 4, 8, 13, 16}, 0, 20), "stride_not_constant");
  EXPECT_EQ(FrameIdsCheck({4, 4}, 0, 20), "stride_not_constant");
  EXPECT_EQ(FrameIdsCheck({0, 2, 4, 6, 8}, 0, 20), "stride_mismatch");
}

TEST(LeRobotChecks, ActionsAndTheirValues) {
  const ImportProfile p = Robotwin();
  const int64_t rows = 40, width = 16;
  std::vector<double> a(size_t(rows * width), 0.5);
  for (int64_t r = 0; r < rows; ++r) {  // identity quaternions (w last)
    a[size_t(r * width + 6)] = a[size_t(r * width + 14)] = 1.0;
    for (int k : {3, 4, 5, 11, 12, 13}) a[size_t(r * width + k)] = 0.0;
  }
  SegmentActions out;
  SegmentCheck c;
  // 5 frame ids -> F = 2, N = 16: 16 zero rows then 16 rows from frame 1 on.
  ASSERT_TRUE(TransformActions(p, a, rows, width, 0, 40, {1, 5, 9, 13, 17}, &out, &c)) << c.message;
  EXPECT_EQ(out.frames, 2);
  EXPECT_EQ(out.steps, 16);
  auto at = [&](int64_t ch, int64_t f, int64_t n) {
    return out.actions[size_t((ch * 2 + f) * 16 + n)];
  };
  auto mask = [&](int64_t ch, int64_t f, int64_t n) {
    return out.mask[size_t((ch * 2 + f) * 16 + n)];
  };
  EXPECT_NEAR(at(0, 0, 0), (0 + 1) / (2 + 1e-6) * 2 - 1, 1e-7);     // a zero row, normalised
  EXPECT_NEAR(at(0, 1, 0), (0 + 1) / (2 + 1e-6) * 2 - 1, 1e-7);     // position relative to row 1: 0
  EXPECT_NEAR(at(28, 1, 3), (0.5 + 1) / (2 + 1e-6) * 2 - 1, 1e-7);  // left gripper, unchanged
  // Relative rotation of equal rotations, with scipy's sign: inv() negates w, so (0, 0, 0, -1).
  EXPECT_NEAR(at(6, 1, 3), (-1 + 1) / (2 + 1e-6) * 2 - 1, 1e-6);
  EXPECT_EQ(mask(20, 1, 3), 0.0f);  // an unused channel: 0 and masked
  EXPECT_EQ(at(20, 1, 3), 0.0f);
  EXPECT_EQ(mask(29, 0, 0), 1.0f);  // the zero rows are supervised

  // (F - 1) * N = 16 rows needed after the shift of 1; 15 there.
  EXPECT_FALSE(TransformActions(p, a, 16, width, 0, 40, {1, 5, 9, 13, 17}, &out, &c));
  EXPECT_EQ(c.check, "too_few_action_rows");
  std::vector<double> narrow(size_t(rows * 14), 0.0);
  EXPECT_FALSE(TransformActions(p, narrow, rows, 14, 0, 40, {1, 5, 9, 13, 17}, &out, &c));
  EXPECT_EQ(c.check, "action_width");
}

PthSegment Cam(int64_t F, int64_t h, int64_t w) {
  PthSegment s;
  s.latent_num_frames = F;
  s.latent_height = h;
  s.latent_width = w;
  s.latent.dtype = StDType::kBF16;
  s.latent.shape = {F * h * w, 2};
  s.latent.bytes.assign(size_t(F * h * w * 2 * 2), '\1');
  return s;
}

TEST(LeRobotChecks, CameraLayout) {
  const ImportProfile p = Robotwin();
  RawTensor out;
  SegmentCheck c;
  ASSERT_TRUE(LayoutLatents(p, {Cam(3, 16, 20), Cam(3, 8, 10), Cam(3, 8, 10)}, &out, &c));
  EXPECT_EQ(out.shape, (std::vector<int64_t>{2, 3, 24, 20}));  // upstream's robotwin 24 x 20
  EXPECT_FALSE(LayoutLatents(p, {Cam(3, 16, 20), Cam(2, 8, 10), Cam(3, 8, 10)}, &out, &c));
  EXPECT_EQ(c.check, "camera_frames_disagree");
  EXPECT_FALSE(LayoutLatents(p, {Cam(3, 16, 20), Cam(3, 8, 10), Cam(3, 8, 12)}, &out, &c));
  EXPECT_EQ(c.check, "layout_mismatch");
  PthSegment torn = Cam(3, 8, 10);
  torn.latent.shape[0] -= 1;
  EXPECT_FALSE(LayoutLatents(p, {Cam(3, 16, 20), torn, Cam(3, 8, 10)}, &out, &c));
  EXPECT_EQ(c.check, "latent_shape");
  ImportProfile concat = p;
  concat.layout = CameraLayout::kConcatW;
  ASSERT_TRUE(LayoutLatents(concat, {Cam(3, 8, 4), Cam(3, 8, 10)}, &out, &c));
  EXPECT_EQ(out.shape, (std::vector<int64_t>{2, 3, 8, 14}));
}

}  // namespace
}  // namespace baton
