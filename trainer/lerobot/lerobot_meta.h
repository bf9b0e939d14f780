// LeRobotDataset: the metadata of one LeRobot v2.1 dataset folder, as upstream's LingBot-VA
// loader reads it (docs/lerobot_import.md): meta/info.json (codebase_version, chunks_size,
// data_path, features), meta/episodes.jsonl (episode_index, tasks, length and upstream's
// `action_config` segments), and the path rules for the episode parquet and the per-segment
// latent files. Read-only; knows nothing of baton's own dataset format.
//
// A v3.0 folder is refused with "not supported yet"; any other malformed metadata is a kData
// Status naming the file and line (exit 65).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

// One training sample of upstream: frames [start, end) of an episode and its instruction.
struct LeRobotSegment {
  int64_t start = 0;
  int64_t end = 0;
  std::string text;
};

struct LeRobotEpisode {
  int64_t index = 0;
  int64_t length = 0;
  std::vector<std::string> tasks;
  // From `action_config`; the whole episode [0, length) when the line has none.
  std::vector<LeRobotSegment> segments;
  bool whole_episode = false;  // true when `segments` came from the length, not action_config
};

struct LeRobotDataset {
  std::string root;
  std::string version;  // codebase_version, "v2.1"
  int64_t chunks_size = 1000;
  double fps = 0;                        // 0 when info.json has none
  int64_t total_episodes = -1;           // -1 when info.json has none
  std::string data_path;                 // the info.json template
  std::vector<LeRobotEpisode> episodes;  // sorted by index

  std::string ParquetPath(int64_t episode) const;
  // latents/chunk-XXX/<cam>/episode_XXXXXX_<start>_<end>.pth
  std::string LatentPath(int64_t episode, const std::string& cam, int64_t start, int64_t end) const;
  const LeRobotEpisode* Find(int64_t episode) const;
};

// Every folder under `src` (itself included) holding meta/info.json, sorted, as upstream's
// loader finds its sub-datasets.
std::vector<std::string> FindLeRobotRoots(const std::string& src);

// Regular files only (a FIFO or device is refused unopened); `data_path` is confined to the
// folder: relative, without `..` (symlinks inside the folder are followed, as the Hub's caches
// link files to blobs).
Result<LeRobotDataset> LoadLeRobotDataset(const std::string& root);

// What the importer checks beyond one episode: a positive `fps`, and `total_episodes` equal to
// the episodes listed, each index below it, and no parquet for index total_episodes (a removed
// line). A trimmed dataset (lerobot-stats's fixture) fails this and is still readable.
Status CheckLeRobotTotals(const LeRobotDataset& d);

// Expands a LeRobot path template: {name} and {name:0Nd} with integer values.
std::string ExpandLeRobotTemplate(const std::string& tmpl,
                                  const std::vector<std::pair<std::string, int64_t>>& values);

}  // namespace baton
