// Checkpoint manifest and validation, without libtorch (the launcher needs it).
//
// A checkpoint folder counts only once MANIFEST.json exists in it and every file it lists has
// the listed size and XXH3-64 hash. The trainer writes the manifest last, inside
// checkpoint_step_<N>.partial/, then renames the folder (docs/checkpoint_format.md).
// Pure functions over the filesystem; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

inline constexpr int kCheckpointFormatVersion = 1;
inline constexpr const char* kManifestName = "MANIFEST.json";
inline constexpr const char* kCheckpointPrefix = "checkpoint_step_";
inline constexpr const char* kPartialSuffix = ".partial";

struct ManifestFile {
  std::string path;   // relative to the checkpoint folder
  uint64_t bytes = 0;
  std::string xxh3;   // 16 lowercase hex digits of XXH3-64
};

struct CheckpointManifest {
  int format_version = kCheckpointFormatVersion;
  int64_t step = 0;
  std::string kind = "full";  // full | weights_only
  int64_t world_size = 1;
  std::string config_hash;
  std::vector<ManifestFile> files;
};

// XXH3-64 of a file, streamed; "" and a Status on read errors.
Result<std::string> HashFile(const std::string& path, uint64_t* bytes_out = nullptr);

// Hashes `files` (relative to `dir`) and writes dir/MANIFEST.json atomically.
Status WriteManifest(const std::string& dir, CheckpointManifest manifest,
                     const std::vector<std::string>& files);

Result<CheckpointManifest> ReadManifest(const std::string& dir);

// Manifest present and parseable, format version known, every file present with the listed size
// and (when `check_hashes`) hash. The Status names the folder and the first problem.
Status VerifyCheckpoint(const std::string& dir, bool check_hashes = true);

// The step of a "checkpoint_step_<N>" folder name; -1 for anything else (including .partial).
int64_t CheckpointStepFromName(const std::string& name);

struct CheckpointEntry {
  std::string path;
  int64_t step = -1;
  bool valid = false;
  std::string problem;  // why it is not valid (empty when valid)
};

// Every checkpoint_step_<N> folder under `checkpoints_dir`, newest step first, each verified.
// `.partial` folders are never listed.
std::vector<CheckpointEntry> ListCheckpoints(const std::string& checkpoints_dir,
                                             bool check_hashes = true);

}  // namespace baton
