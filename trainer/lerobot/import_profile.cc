#include "trainer/lerobot/import_profile.h"

#include <cmath>
#include <set>

#include <yaml-cpp/yaml.h>

#include "schema/input_file.h"

namespace baton {
namespace {
constexpr uint64_t kMaxProfileBytes = 1 << 20;
// Sizes far beyond any robot's or text encoder's: what the importer may allocate per segment
// stays proportional to the bytes it reads.
constexpr int64_t kMaxActionDim = 4096, kMaxActionPerFrame = 4096, kMaxTextLen = 1 << 20;
}  // namespace

std::vector<int64_t> ImportProfile::InverseChannels() const {
  std::vector<int64_t> inv(size_t(action_dim), -1);
  for (size_t i = 0; i < used_action_channel_ids.size(); ++i) {
    inv[size_t(used_action_channel_ids[i])] = int64_t(i);
  }
  return inv;
}

namespace {

Status BadKey(const std::string& path, const std::string& key, const std::string& why) {
  return Status::Config(path + ": key '" + key + "': " + why);
}

// Every key is known and the required ones are there.
Status CheckProfileKeys(const YAML::Node& y, const std::string& path) {
  if (!y.IsMap()) return Status::Config(path + ": an import profile is a YAML mapping");
  static const std::set<std::string> kKeys = {
      "env_type",   "obs_cam_keys",     "used_action_channel_ids",
      "action_dim", "action_per_frame", "relative_pose_columns",
      "norm_stat",  "text_len"};
  for (const auto& kv : y) {
    const std::string k = kv.first.as<std::string>();
    if (!kKeys.count(k)) return BadKey(path, k, "unknown key");
  }
  for (const char* k :
       {"env_type", "obs_cam_keys", "used_action_channel_ids", "action_per_frame", "norm_stat"}) {
    if (!y[k]) return BadKey(path, k, "missing");
  }
  return Status::Ok();
}

// env_type and obs_cam_keys: how the cameras are laid out, and their folder names.
Status ParseCameras(const YAML::Node& y, const std::string& path, ImportProfile& p) {
  const std::string env = y["env_type"].as<std::string>();
  if (env == "robotwin_tshape") {
    p.layout = CameraLayout::kRobotwinTShape;
  } else if (env == "concat_w") {
    p.layout = CameraLayout::kConcatW;
  } else {
    return BadKey(path, "env_type", "'" + env + "' is not robotwin_tshape or concat_w");
  }
  p.obs_cam_keys = y["obs_cam_keys"].as<std::vector<std::string>>();
  if (p.obs_cam_keys.empty()) return BadKey(path, "obs_cam_keys", "needs at least one camera");
  for (const auto& cam : p.obs_cam_keys) {  // a folder name under latents/chunk-XXX/
    if (cam.empty() || cam == "." || cam == ".." || cam.find('/') != std::string::npos ||
        cam.find('\0') != std::string::npos) {
      return BadKey(path, "obs_cam_keys", "'" + cam + "' is not a plain folder name");
    }
  }
  if (p.layout == CameraLayout::kRobotwinTShape && p.obs_cam_keys.size() < 2) {
    return BadKey(path, "obs_cam_keys",
                  "robotwin_tshape needs the main camera and at least one wrist");
  }
  return Status::Ok();
}

// The action channels: their count, the ones used, the stride and the relative poses.
Status ParseActionChannels(const YAML::Node& y, const std::string& path, ImportProfile& p) {
  if (y["action_dim"]) p.action_dim = y["action_dim"].as<int64_t>();
  if (p.action_dim < 1 || p.action_dim > kMaxActionDim) {
    return BadKey(path, "action_dim", "must be in [1, " + std::to_string(kMaxActionDim) + "]");
  }
  p.used_action_channel_ids = y["used_action_channel_ids"].as<std::vector<int64_t>>();
  std::set<int64_t> seen;
  for (int64_t c : p.used_action_channel_ids) {
    if (c < 0 || c >= p.action_dim) {
      return BadKey(path, "used_action_channel_ids",
                    std::to_string(c) + " outside [0, action_dim)");
    }
    if (!seen.insert(c).second)
      return BadKey(path, "used_action_channel_ids", std::to_string(c) + " repeats");
  }
  if (p.used_action_channel_ids.empty()) return BadKey(path, "used_action_channel_ids", "empty");
  p.action_per_frame = y["action_per_frame"].as<int64_t>();
  if (p.action_per_frame < 4 || p.action_per_frame % 4 != 0 ||
      p.action_per_frame > kMaxActionPerFrame) {
    return BadKey(path, "action_per_frame",
                  "must be 4 x the frame stride (a positive multiple of 4, at most " +
                      std::to_string(kMaxActionPerFrame) + ")");
  }
  if (y["relative_pose_columns"]) {
    p.relative_pose_columns = y["relative_pose_columns"].as<std::vector<int64_t>>();
  }
  for (int64_t c : p.relative_pose_columns) {
    if (c < 0 || c > int64_t(p.used_action_channel_ids.size()) - 7) {
      return BadKey(path, "relative_pose_columns",
                    std::to_string(c) + ": a pose takes 7 raw columns (xyz + quaternion xyzw)");
    }
  }
  return Status::Ok();
}

// norm_stat: finite q01 and q99 per action channel.
Status ParseNormStat(const YAML::Node& y, const std::string& path, ImportProfile& p) {
  const YAML::Node ns = y["norm_stat"];
  if (!ns.IsMap() || !ns["q01"] || !ns["q99"])
    return BadKey(path, "norm_stat", "needs q01 and q99");
  p.q01 = ns["q01"].as<std::vector<double>>();
  p.q99 = ns["q99"].as<std::vector<double>>();
  if (int64_t(p.q01.size()) != p.action_dim || int64_t(p.q99.size()) != p.action_dim) {
    return BadKey(path, "norm_stat",
                  "q01 and q99 need action_dim (" + std::to_string(p.action_dim) + ") values each");
  }
  for (size_t c = 0; c < p.q01.size(); ++c) {
    if (!std::isfinite(p.q01[c]) || !std::isfinite(p.q99[c])) {
      return BadKey(path, "norm_stat", "channel " + std::to_string(c) + ": q01/q99 not finite");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ImportProfile> LoadImportProfile(const std::string& path) {
  auto text = ReadRegularFile(path, kMaxProfileBytes);
  if (!text.ok()) return Status::Config(text.status().message());
  ImportProfile p;
  p.name = path;
  p.text = text.value();
  try {
    const YAML::Node y = YAML::Load(p.text);
    BATON_RETURN_IF_ERROR(CheckProfileKeys(y, path));
    BATON_RETURN_IF_ERROR(ParseCameras(y, path, p));
    BATON_RETURN_IF_ERROR(ParseActionChannels(y, path, p));
    if (y["text_len"]) p.text_len = y["text_len"].as<int64_t>();
    if (p.text_len < 1 || p.text_len > kMaxTextLen) {
      return BadKey(path, "text_len", "must be in [1, " + std::to_string(kMaxTextLen) + "]");
    }
    BATON_RETURN_IF_ERROR(ParseNormStat(y, path, p));
  } catch (const YAML::Exception& e) {
    return Status::Config(path + ": " + e.what());
  }
  return p;
}

}  // namespace baton
