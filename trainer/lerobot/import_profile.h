// ImportProfile: what upstream keeps in its training config rather than in the data, and the
// importer needs to turn a LeRobot segment into the sample upstream's loader would feed:
// camera keys and layout, the channel map, the quantile normaliser, the action rate and the
// relative-pose rule. Read from a YAML file (configs/import/*.yaml; docs/lerobot_import.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

enum class CameraLayout {
  kRobotwinTShape,  // wrists side by side along w, on top of the first camera (along h)
  kConcatW,         // every camera side by side along w, in obs_cam_keys order
};

struct ImportProfile {
  std::string name;  // the file it came from
  CameraLayout layout = CameraLayout::kConcatW;
  std::vector<std::string> obs_cam_keys;
  std::vector<int64_t> used_action_channel_ids;  // raw column i -> model channel used[i]
  int64_t action_dim = 30;
  int64_t action_per_frame = 16;  // N = 4 * stride
  // First column of each (x, y, z, qx, qy, qz, qw) pose made relative to the segment's first row.
  std::vector<int64_t> relative_pose_columns;
  std::vector<double> q01, q99;  // action_dim values each
  int64_t text_len = 512;
  std::string text;  // the file's bytes: part of the import's input fingerprint

  // Model channel c <- raw column inverse[c], or -1 (an unused channel).
  std::vector<int64_t> InverseChannels() const;
};

// Code::kConfig naming the file and key for a missing or bad value (exit 78).
Result<ImportProfile> LoadImportProfile(const std::string& path);

}  // namespace baton
