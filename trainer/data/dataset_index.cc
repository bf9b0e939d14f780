#include "trainer/data/dataset_index.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include <xxhash.h>

#include <cinttypes>
#include <cstdio>

#include "schema/atomic_file.h"
#include "schema/dataset_folder.h"

namespace baton {
namespace fs = std::filesystem;

bool DatasetShape::operator==(const DatasetShape& o) const {
  return channels == o.channels && height == o.height && width == o.width &&
         action_dim == o.action_dim && action_steps == o.action_steps && text_len == o.text_len &&
         text_dim == o.text_dim;
}

std::string DatasetShape::ToString() const {
  return "latents [" + std::to_string(channels) + ", F, " + std::to_string(height) + ", " +
         std::to_string(width) + "], actions [" + std::to_string(action_dim) + ", F, " +
         std::to_string(action_steps) + "], text [" + std::to_string(text_len) + ", " +
         std::to_string(text_dim) + "]";
}

std::vector<int64_t> DatasetIndex::BucketKeys() const {
  std::vector<int64_t> keys;
  keys.reserve(episodes.size());
  for (const auto& e : episodes) keys.push_back(BucketKey(e));
  return keys;
}

std::string DatasetIndex::EpisodePath(int64_t i) const {
  return (fs::path(dir) / episodes[static_cast<size_t>(i)].file).string();
}

std::string DatasetIndex::TextPath(int64_t i) const {
  const EpisodeMeta& e = episodes[static_cast<size_t>(i)];
  return (fs::path(dir) / (e.text.empty() ? e.file : e.text)).string();
}

std::string EpisodeMetaJson(const EpisodeMeta& e) {
  nlohmann::ordered_json j{{"id", e.id}, {"n_video", e.n_video}, {"file", e.file}};
  // Absent in version 1, so a version-1 index keeps its fingerprint.
  if (!e.text.empty()) j["text"] = e.text;
  return j.dump();
}

std::string DatasetShapeJson(const DatasetShape& s, int version) {
  return nlohmann::ordered_json{{"format", "baton-episodes"},
                                {"version", version},
                                {"latent_channels", s.channels},
                                {"height", s.height},
                                {"width", s.width},
                                {"action_dim", s.action_dim},
                                {"action_steps", s.action_steps},
                                {"text_len", s.text_len},
                                {"text_dim", s.text_dim}}
             .dump(2) +
         "\n";
}

namespace {

Result<DatasetShape> LoadInfo(const std::string& path, int* version) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto bad = [&](const std::string& what) { return Status::Data(path + ": " + what); };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.value());
  } catch (const nlohmann::json::parse_error& e) {
    return bad(std::string("not valid JSON: ") + e.what());
  }
  if (j.is_object() && j.contains("version")) {
    if (!j["version"].is_number_integer() || j["version"].get<int64_t>() < 1) {
      return bad("key 'version' must be a positive integer");
    }
    if (j["version"].get<int64_t>() > kDatasetFormatVersion) {
      return bad("dataset format version " + std::to_string(j["version"].get<int64_t>()) +
                 " is newer than this baton reads (up to " + std::to_string(kDatasetFormatVersion) +
                 ")");
    }
    *version = int(j["version"].get<int64_t>());
  }
  DatasetShape s;
  for (const auto& [key, out] : {std::pair<const char*, int64_t*>{"latent_channels", &s.channels},
                                 {"height", &s.height},
                                 {"width", &s.width},
                                 {"action_dim", &s.action_dim},
                                 {"action_steps", &s.action_steps},
                                 {"text_len", &s.text_len},
                                 {"text_dim", &s.text_dim}}) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer() ||
        j[key].get<int64_t>() < 1) {
      return bad(std::string("key '") + key + "' must be a positive integer");
    }
    *out = j[key].get<int64_t>();
  }
  return s;
}

std::string IndexFingerprint(const DatasetIndex& index) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  auto add = [&](const std::string& s) {
    XXH3_64bits_update(state, s.data(), s.size());
    XXH3_64bits_update(state, "\n", 1);  // a separator, so ("ab","c") and ("a","bc") differ
  };
  for (const auto& e : index.episodes) add(EpisodeMetaJson(e));
  add(index.shape ? DatasetShapeJson(*index.shape, index.version) : std::string("no info.json"));
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, h);
  return hex;
}

// One line of meta/episodes.jsonl; where names it in errors.
Status ParseEpisodeEntry(const std::string& line, const std::string& where, EpisodeMeta& e) {
  try {
    const auto j = nlohmann::json::parse(line);
    if (!j.is_object()) return Status::Data(where + ": expected a JSON object per line");
    if (!j.contains("id") || !(j["id"].is_string() || j["id"].is_number_integer())) {
      return Status::Data(where + ": missing or bad 'id'");
    }
    e.id =
        j["id"].is_string() ? j["id"].get<std::string>() : std::to_string(j["id"].get<int64_t>());
    if (!j.contains("n_video") || !j["n_video"].is_number_integer()) {
      return Status::Data(where + ": episode '" + e.id + "': missing or non-integer 'n_video'");
    }
    e.n_video = j["n_video"].get<int64_t>();
    if (e.n_video < 1) {
      return Status::Data(where + ": episode '" + e.id + "': n_video " + std::to_string(e.n_video) +
                          " must be >= 1");
    }
    if (!j.contains("file") || !j["file"].is_string() || j["file"].get<std::string>().empty()) {
      return Status::Data(where + ": episode '" + e.id + "': missing or bad 'file'");
    }
    e.file = j["file"].get<std::string>();
    if (j.contains("text")) {
      if (!j["text"].is_string() || j["text"].get<std::string>().empty()) {
        return Status::Data(where + ": episode '" + e.id + "': 'text' must name a file");
      }
      e.text = j["text"].get<std::string>();
    }
  } catch (const nlohmann::json::exception& ex) {
    return Status::Data(where + ": not valid JSON: " + ex.what());
  }
  return Status::Ok();
}

}  // namespace

Result<DatasetIndex> LoadDatasetIndex(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound(dir + ": no such dataset folder");
  DatasetIndex index;
  index.dir = fs::absolute(dir).lexically_normal().string();
  const std::string meta = (fs::path(index.dir) / "meta" / "episodes.jsonl").string();
  // A FIFO or device here would block the reader forever: only regular files are metadata.
  for (const std::string& f : {meta, (fs::path(index.dir) / "meta" / "info.json").string()}) {
    if (fs::exists(f, ec) && !fs::is_regular_file(f, ec)) {
      return Status::Data(f + ": not a regular file (a dataset's metadata must be plain files)");
    }
  }
  // LeRobot folders also hold meta/episodes.jsonl and meta/info.json, in another schema: say what
  // the folder is instead of "missing 'id'".
  if (const auto lerobot_version = LeRobotFolderVersion(index.dir)) {
    return Status::Data(
        index.dir + ": a LeRobot dataset (codebase_version " + *lerobot_version +
        "): import it first with baton-train import-lerobot (docs/lerobot_import.md)");
  }
  std::ifstream in(meta);
  if (!in) {
    return Status::NotFound(meta +
                            ": missing episode index (a dataset folder holds "
                            "meta/episodes.jsonl; `baton-train synth-data` writes one)");
  }
  std::unordered_set<std::string> ids;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = meta + ":" + std::to_string(line_no);
    EpisodeMeta e;
    BATON_RETURN_IF_ERROR(ParseEpisodeEntry(line, where, e));
    if (!ids.insert(e.id).second)
      return Status::Data(where + ": episode id '" + e.id + "' repeats");
    e.frames = EpisodeLatentFrames(e.n_video);
    index.episodes.push_back(std::move(e));
  }
  if (index.episodes.empty()) return Status::Data(meta + ": the episode index is empty");

  const std::string info = (fs::path(index.dir) / "meta" / "info.json").string();
  if (fs::exists(info, ec)) {
    auto shape = LoadInfo(info, &index.version);
    if (!shape.ok()) return shape.status();
    index.shape = shape.value();
  }
  if (index.version < 2) {
    for (const auto& e : index.episodes) {
      if (!e.text.empty()) {
        return Status::Data(meta + ": episode '" + e.id +
                            "' names a shared text file, which needs format version 2 in "
                            "meta/info.json");
      }
    }
  }
  index.fingerprint = IndexFingerprint(index);
  return index;
}

}  // namespace baton
