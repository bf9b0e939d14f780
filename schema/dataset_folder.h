// What a dataset folder is, decided once for both binaries: `baton submit`'s config check, the
// trainer's dataset index and the LeRobot importer all ask here, so they cannot disagree about
// which folders are LeRobot datasets (docs/dataset_format.md, "Which folder is which").
//
//   A folder is a LeRobot dataset when <dir>/meta/info.json is a regular file holding a JSON
//   object with a string "codebase_version" ("v2.1"). Baton's own info.json ("format":
//   "baton-episodes") never has that key; any other folder is not a LeRobot dataset.
//
// Also the config check's cheap episode count, made the way the dataset index counts. Reads only
// regular files (a FIFO or a device is never opened) and at most kMaxDatasetInfoBytes of
// info.json. Pure functions of the filesystem; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "schema/status.h"

namespace baton {

// LeRobot's info.json is a few KiB (its feature list); a larger file is not metadata.
constexpr uint64_t kMaxDatasetInfoBytes = 16ull << 20;

// <dir>/meta/info.json, where the rule looks.
std::string DatasetInfoPath(const std::string& dir);

// The rule over a parsed info.json: its codebase_version when it is LeRobot's, else nullopt.
std::optional<std::string> LeRobotCodebaseVersion(const nlohmann::json& info);

// The rule over a folder: reads meta/info.json; nullopt when it is absent, not a regular file,
// too large, not JSON, or not LeRobot's (the caller that reads the folder reports those itself).
std::optional<std::string> LeRobotFolderVersion(const std::string& dir);
inline bool IsLeRobotFolder(const std::string& dir) {
  return LeRobotFolderVersion(dir).has_value();
}

// Counts a dataset's episodes the way the trainer's index reader does (the non-blank lines of
// meta/episodes.jsonl), reading only until `enough` are seen so a large index costs little.
// -1 when there is no index (the trainer reports that, naming it); kConfig naming the file when
// the index is not a regular file or cannot be read.
Result<int64_t> CountEpisodes(const std::string& index_path, int64_t enough);

}  // namespace baton
