#include "trainer/lerobot/import_profile.h"

#include <set>

#include <yaml-cpp/yaml.h>

#include "schema/atomic_file.h"

namespace baton {

std::vector<int64_t> ImportProfile::InverseChannels() const {
  std::vector<int64_t> inv(size_t(action_dim), -1);
  for (size_t i = 0; i < used_action_channel_ids.size(); ++i) {
    inv[size_t(used_action_channel_ids[i])] = int64_t(i);
  }
  return inv;
}

Result<ImportProfile> LoadImportProfile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return Status::Config(text.status().message());
  ImportProfile p;
  p.name = path;
  p.text = text.value();
  auto bad = [&](const std::string& key, const std::string& why) {
    return Status::Config(path + ": key '" + key + "': " + why);
  };
  try {
    const YAML::Node y = YAML::Load(p.text);
    if (!y.IsMap()) return Status::Config(path + ": an import profile is a YAML mapping");
    static const std::set<std::string> kKeys = {
        "env_type",   "obs_cam_keys",     "used_action_channel_ids",
        "action_dim", "action_per_frame", "relative_pose_columns",
        "norm_stat",  "text_len"};
    for (const auto& kv : y) {
      const std::string k = kv.first.as<std::string>();
      if (!kKeys.count(k)) return bad(k, "unknown key");
    }
    for (const char* k :
         {"env_type", "obs_cam_keys", "used_action_channel_ids", "action_per_frame", "norm_stat"}) {
      if (!y[k]) return bad(k, "missing");
    }
    const std::string env = y["env_type"].as<std::string>();
    if (env == "robotwin_tshape") {
      p.layout = CameraLayout::kRobotwinTShape;
    } else if (env == "concat_w") {
      p.layout = CameraLayout::kConcatW;
    } else {
      return bad("env_type", "'" + env + "' is not robotwin_tshape or concat_w");
    }
    p.obs_cam_keys = y["obs_cam_keys"].as<std::vector<std::string>>();
    if (p.obs_cam_keys.empty()) return bad("obs_cam_keys", "needs at least one camera");
    if (p.layout == CameraLayout::kRobotwinTShape && p.obs_cam_keys.size() < 2) {
      return bad("obs_cam_keys", "robotwin_tshape needs the main camera and at least one wrist");
    }
    if (y["action_dim"]) p.action_dim = y["action_dim"].as<int64_t>();
    if (p.action_dim < 1) return bad("action_dim", "must be >= 1");
    p.used_action_channel_ids = y["used_action_channel_ids"].as<std::vector<int64_t>>();
    std::set<int64_t> seen;
    for (int64_t c : p.used_action_channel_ids) {
      if (c < 0 || c >= p.action_dim) {
        return bad("used_action_channel_ids", std::to_string(c) + " outside [0, action_dim)");
      }
      if (!seen.insert(c).second)
        return bad("used_action_channel_ids", std::to_string(c) + " repeats");
    }
    if (p.used_action_channel_ids.empty()) return bad("used_action_channel_ids", "empty");
    p.action_per_frame = y["action_per_frame"].as<int64_t>();
    if (p.action_per_frame < 4 || p.action_per_frame % 4 != 0) {
      return bad("action_per_frame", "must be 4 x the frame stride (a positive multiple of 4)");
    }
    if (y["relative_pose_columns"]) {
      p.relative_pose_columns = y["relative_pose_columns"].as<std::vector<int64_t>>();
    }
    for (int64_t c : p.relative_pose_columns) {
      if (c < 0 || c + 7 > int64_t(p.used_action_channel_ids.size())) {
        return bad("relative_pose_columns",
                   std::to_string(c) + ": a pose takes 7 raw columns (xyz + quaternion xyzw)");
      }
    }
    if (y["text_len"]) p.text_len = y["text_len"].as<int64_t>();
    if (p.text_len < 1) return bad("text_len", "must be >= 1");
    const YAML::Node ns = y["norm_stat"];
    if (!ns.IsMap() || !ns["q01"] || !ns["q99"]) return bad("norm_stat", "needs q01 and q99");
    p.q01 = ns["q01"].as<std::vector<double>>();
    p.q99 = ns["q99"].as<std::vector<double>>();
    if (int64_t(p.q01.size()) != p.action_dim || int64_t(p.q99.size()) != p.action_dim) {
      return bad("norm_stat",
                 "q01 and q99 need action_dim (" + std::to_string(p.action_dim) + ") values each");
    }
  } catch (const YAML::Exception& e) {
    return Status::Config(path + ": " + e.what());
  }
  return p;
}

}  // namespace baton
