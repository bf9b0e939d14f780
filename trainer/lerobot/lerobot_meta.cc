#include "trainer/lerobot/lerobot_meta.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "schema/dataset_folder.h"
#include "schema/input_file.h"

namespace baton {
namespace fs = std::filesystem;

namespace {
constexpr uint64_t kMaxEpisodesBytes = 1ull << 30;
}  // namespace

std::string ExpandLeRobotTemplate(const std::string& tmpl,
                                  const std::vector<std::pair<std::string, int64_t>>& values) {
  std::string out;
  for (size_t i = 0; i < tmpl.size();) {
    const size_t close = tmpl[i] == '{' ? tmpl.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      out += tmpl[i++];
      continue;
    }
    const std::string field = tmpl.substr(i + 1, close - i - 1);
    const size_t colon = field.find(':');
    const std::string name = field.substr(0, colon);
    int width = 0;
    if (colon != std::string::npos) width = std::atoi(field.c_str() + colon + 1);
    bool done = false;
    for (const auto& [k, v] : values) {
      if (k != name) continue;
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%0*lld", width, static_cast<long long>(v));
      out += buf;
      done = true;
    }
    if (!done) out += tmpl.substr(i, close - i + 1);
    i = close + 1;
  }
  return out;
}

std::vector<std::string> FindLeRobotRoots(const std::string& src) {
  std::vector<std::string> roots;
  std::error_code ec;
  if (fs::is_regular_file(fs::path(src) / "meta" / "info.json", ec)) {
    roots.push_back(fs::path(src).lexically_normal().string());
  }
  for (fs::recursive_directory_iterator it(src, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.filename() == "info.json" && p.parent_path().filename() == "meta" &&
        it->is_regular_file(ec)) {
      const std::string root = p.parent_path().parent_path().lexically_normal().string();
      if (roots.empty() || roots.front() != root) roots.push_back(root);
    }
  }
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

std::string LeRobotDataset::ParquetPath(int64_t episode) const {
  return (fs::path(root) /
          ExpandLeRobotTemplate(
              data_path, {{"episode_chunk", episode / chunks_size}, {"episode_index", episode}}))
      .string();
}

std::string LeRobotDataset::LatentPath(int64_t episode, const std::string& cam, int64_t start,
                                       int64_t end) const {
  char name[96];
  std::snprintf(name, sizeof(name), "episode_%06lld_%lld_%lld.pth", static_cast<long long>(episode),
                static_cast<long long>(start), static_cast<long long>(end));
  char chunk[32];
  std::snprintf(chunk, sizeof(chunk), "chunk-%03lld",
                static_cast<long long>(episode / chunks_size));
  return (fs::path(root) / "latents" / chunk / cam / name).string();
}

const LeRobotEpisode* LeRobotDataset::Find(int64_t episode) const {
  for (const auto& e : episodes) {
    if (e.index == episode) return &e;
  }
  return nullptr;
}

namespace {

// meta/info.json: the codebase version, chunking, fps and the data_path template.
Status ParseLeRobotInfo(const std::string& root, LeRobotDataset& d) {
  const std::string info_path = (fs::path(root) / "meta" / "info.json").string();
  auto info_text = ReadRegularFile(info_path, kMaxDatasetInfoBytes);
  if (!info_text.ok()) return Status::Data(info_text.status().message());
  try {
    const auto j = nlohmann::json::parse(info_text.value());
    const std::optional<std::string> version = LeRobotCodebaseVersion(j);
    if (!version) return Status::Data(info_path + ": no codebase_version (not a LeRobot dataset?)");
    d.version = *version;
    if (d.version.rfind("v3", 0) == 0) {
      return Status::Data(info_path + ": LeRobot " + d.version +
                          " is not supported yet (baton imports LeRobot v2.1, the version "
                          "LingBot-VA's loader reads; convert the dataset back to v2.1)");
    }
    if (d.version != "v2.1" && d.version != "v2.0") {
      return Status::Data(info_path + ": LeRobot codebase_version '" + d.version +
                          "' is not supported (v2.1 only)");
    }
    if (j.contains("chunks_size") && j["chunks_size"].is_number_integer()) {
      d.chunks_size = j["chunks_size"].get<int64_t>();
    }
    if (d.chunks_size < 1) return Status::Data(info_path + ": chunks_size must be >= 1");
    if (j.contains("fps") && j["fps"].is_number()) d.fps = j["fps"].get<double>();
    if (j.contains("total_episodes") && j["total_episodes"].is_number_integer()) {
      d.total_episodes = j["total_episodes"].get<int64_t>();
    }
    if (!j.contains("data_path") || !j["data_path"].is_string()) {
      return Status::Data(info_path + ": missing 'data_path'");
    }
    d.data_path = j["data_path"].get<std::string>();
    // Confined to the dataset folder: the template is a relative path with no `..` step.
    const fs::path dp(d.data_path);
    bool escapes = dp.empty() || dp.is_absolute() || dp.has_root_name() || dp.has_root_directory();
    for (const auto& part : dp) escapes = escapes || part == "..";
    if (escapes) {
      return Status::Data(info_path + ": data_path '" + d.data_path +
                          "' leaves the dataset folder (a relative path without '..' is expected)");
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Data(info_path + ": not valid JSON: " + e.what());
  }
  return Status::Ok();
}

// The episode's segments: its action_config list, or the whole episode under its first task.
Status ParseSegments(const nlohmann::json& j, const std::string& where, LeRobotEpisode& e) {
  if (j.contains("action_config")) {
    if (!j["action_config"].is_array())
      return Status::Data(where + ": 'action_config' must be a list");
    for (const auto& s : j["action_config"]) {
      if (!s.is_object() || !s.contains("start_frame") || !s["start_frame"].is_number_integer() ||
          !s.contains("end_frame") || !s["end_frame"].is_number_integer()) {
        return Status::Data(where +
                            ": an action_config entry needs integer start_frame and end_frame");
      }
      LeRobotSegment seg{s["start_frame"].get<int64_t>(), s["end_frame"].get<int64_t>(), ""};
      if (s.contains("action_text") && s["action_text"].is_string()) {
        seg.text = s["action_text"].get<std::string>();
      }
      if (seg.start < 0 || seg.end <= seg.start) {
        return Status::Data(where + ": action_config segment [" + std::to_string(seg.start) + ", " +
                            std::to_string(seg.end) + ") is empty or negative");
      }
      e.segments.push_back(seg);
    }
  } else {
    e.whole_episode = true;
    e.segments.push_back({0, e.length, e.tasks.empty() ? "" : e.tasks.front()});
  }
  return Status::Ok();
}

// One line of meta/episodes.jsonl; where names it in errors.
Status ParseEpisodeLine(const std::string& line, const std::string& where, LeRobotEpisode& e) {
  try {
    const auto j = nlohmann::json::parse(line);
    if (!j.is_object() || !j.contains("episode_index") || !j["episode_index"].is_number_integer() ||
        !j.contains("length") || !j["length"].is_number_integer()) {
      return Status::Data(where + ": needs integer 'episode_index' and 'length'");
    }
    e.index = j["episode_index"].get<int64_t>();
    e.length = j["length"].get<int64_t>();
    if (e.index < 0 || e.length < 1) return Status::Data(where + ": bad episode_index or length");
    if (j.contains("tasks") && j["tasks"].is_array()) {
      for (const auto& t : j["tasks"]) {
        if (t.is_string()) e.tasks.push_back(t.get<std::string>());
      }
    }
    BATON_RETURN_IF_ERROR(ParseSegments(j, where, e));
  } catch (const nlohmann::json::exception& ex) {
    return Status::Data(where + ": not valid JSON: " + ex.what());
  }
  return Status::Ok();
}

}  // namespace

Result<LeRobotDataset> LoadLeRobotDataset(const std::string& root) {
  LeRobotDataset d;
  d.root = fs::path(root).lexically_normal().string();
  BATON_RETURN_IF_ERROR(ParseLeRobotInfo(root, d));

  const std::string ep_path = (fs::path(root) / "meta" / "episodes.jsonl").string();
  auto ep_text = ReadRegularFile(ep_path, kMaxEpisodesBytes);
  if (!ep_text.ok()) {
    if (ep_text.status().code() == Code::kNotFound) {
      return Status::Data(ep_path + ": missing (a LeRobot v2.1 dataset lists its episodes here)");
    }
    return Status::Data(ep_text.status().message());
  }
  std::istringstream in(ep_text.value());
  std::string line;
  int64_t line_no = 0;
  std::set<int64_t> seen;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = ep_path + ":" + std::to_string(line_no);
    LeRobotEpisode e;
    BATON_RETURN_IF_ERROR(ParseEpisodeLine(line, where, e));
    if (!seen.insert(e.index).second) {
      return Status::Data(where + ": episode_index " + std::to_string(e.index) + " repeats");
    }
    d.episodes.push_back(std::move(e));
  }
  std::sort(d.episodes.begin(), d.episodes.end(),
            [](const LeRobotEpisode& a, const LeRobotEpisode& b) { return a.index < b.index; });
  return d;
}

Status CheckLeRobotTotals(const LeRobotDataset& d) {
  const std::string info_path = (fs::path(d.root) / "meta" / "info.json").string();
  const std::string ep_path = (fs::path(d.root) / "meta" / "episodes.jsonl").string();
  if (!(d.fps > 0) || !std::isfinite(d.fps)) {
    return Status::Data(info_path + ": 'fps' missing or not a positive number");
  }
  if (d.total_episodes < 0) {
    return Status::Data(info_path + ": 'total_episodes' missing or not an integer >= 0");
  }
  const int64_t listed = int64_t(d.episodes.size());
  if (listed != d.total_episodes) {
    return Status::Data(ep_path + ": lists " + std::to_string(listed) + " episodes, " + info_path +
                        " says total_episodes " + std::to_string(d.total_episodes) +
                        " (a line removed or added?)");
  }
  for (const auto& e : d.episodes) {
    if (e.index >= d.total_episodes) {
      return Status::Data(ep_path + ": episode_index " + std::to_string(e.index) +
                          " is outside [0, total_episodes " + std::to_string(d.total_episodes) +
                          ")");
    }
  }
  // Both files edited alike: an episode's parquet that neither lists.
  std::error_code ec;
  const std::string next = d.ParquetPath(d.total_episodes);
  if (fs::exists(next, ec)) {
    return Status::Data(next + ": an episode parquet beyond total_episodes " +
                        std::to_string(d.total_episodes) + " that " + ep_path +
                        " does not list (a line removed?)");
  }
  return Status::Ok();
}

}  // namespace baton
