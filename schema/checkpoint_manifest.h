// Checkpoint manifest and validation, without libtorch (the launcher needs it).
//
// A checkpoint folder counts only once MANIFEST.json exists in it, lists every file its kind
// requires (RequiredFiles), and every listed file has the listed size and XXH3-64 hash; the
// manifest's step, the folder name's and trainer_state.json's agree. The trainer writes the
// manifest last, inside checkpoint_step_<N>.partial/, then renames the folder
// (docs/checkpoint_format.md). Pure functions over the filesystem; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

// Version 2: parameter names are upstream's state-dict keys, transformer/ may be sharded, and a
// checkpoint whose transformer/ is not in the master dtype holds master_weights.safetensors.
// Version 1 folders are converted by `baton-train ckpt upgrade DIR`.
inline constexpr int kCheckpointFormatVersion = 2;
inline constexpr const char* kManifestName = "MANIFEST.json";
inline constexpr const char* kCheckpointPrefix = "checkpoint_step_";
inline constexpr const char* kPartialSuffix = ".partial";

// The files of a checkpoint folder, relative to it.
inline constexpr const char* kWeightsFile = "transformer/diffusion_pytorch_model.safetensors";
// Sharded weights (above checkpoint.max_shard_bytes): the index names every shard, diffusers'
// layout; the manifest then lists the index and every shard instead of kWeightsFile.
inline constexpr const char* kWeightsIndexFile =
    "transformer/diffusion_pytorch_model.safetensors.index.json";
// The exact master weights, present when transformer/ holds another dtype (bf16 export).
inline constexpr const char* kMasterWeightsFile = "master_weights.safetensors";
// Written by W > 1 ranks: one master_weights-0000r-of-0000W.safetensors per rank (the
// parameters it owns) and this index naming each tensor's file; the manifest lists both.
inline constexpr const char* kMasterWeightsIndexFile = "master_weights.safetensors.index.json";
inline constexpr const char* kModelConfigFile = "transformer/config.json";
inline constexpr const char* kOptimizerFile = "optimizer.safetensors";
// A run with sharded optimizer state (optim.shard) writes one file per rank instead, each by the
// rank that owns those parameters (OptimizerShardFile), and this index naming, diffusers-style,
// the file of every exp_avg.<p> / exp_avg_sq.<p> / step.<p>; the manifest lists the index and
// every file.
inline constexpr const char* kOptimizerIndexFile = "optimizer.safetensors.index.json";
inline constexpr const char* kStateFile = "trainer_state.json";

// "optimizer-00002-of-00004.safetensors" for rank 1 of 4.
std::string OptimizerShardFile(int64_t rank, int64_t world);
// "master_weights-00002-of-00004.safetensors" for rank 1 of 4.
std::string MasterWeightsShardFile(int64_t rank, int64_t world);

// What a manifest of `kind` must list: full = weights, model config, optimizer state and
// trainer state; weights_only = the weights. Empty for an unknown kind. The weights entry
// (kWeightsFile) may instead be kWeightsIndexFile plus every shard its weight_map names, and the
// optimizer entry kOptimizerIndexFile plus its shards.
std::vector<std::string> RequiredFiles(const std::string& kind);

struct ManifestFile {
  std::string path;  // relative to the checkpoint folder
  uint64_t bytes = 0;
  std::string xxh3;  // 16 lowercase hex digits of XXH3-64
};

struct CheckpointManifest {
  int format_version = kCheckpointFormatVersion;
  int64_t step = 0;
  std::string kind = "full";  // full | weights_only
  int64_t world_size = 1;
  std::string config_hash;
  // The trainer checked every weight and optimizer value for NaN/Inf before writing. Retention
  // never deletes the newest checkpoint that says so.
  bool finite = false;
  std::vector<ManifestFile> files;
};

// XXH3-64 of a file, streamed; "" and a Status on read errors.
Result<std::string> HashFile(const std::string& path, uint64_t* bytes_out = nullptr);

// Hashes `files` (relative to `dir`) and writes dir/MANIFEST.json atomically.
Status WriteManifest(const std::string& dir, CheckpointManifest manifest,
                     const std::vector<std::string>& files);
// Writes dir/MANIFEST.json atomically from `manifest.files` as given (sizes and hashes the
// writers computed while writing).
Status WriteManifestListed(const std::string& dir, const CheckpointManifest& manifest);

Result<CheckpointManifest> ReadManifest(const std::string& dir);

// Manifest present and parseable, format version and kind known, every required file listed
// once, every listed path inside the folder and present with the listed size and (when
// `check_hashes`) hash, and the steps agree: the manifest's with a checkpoint_step_<N> folder
// name, and (kind full) with trainer_state.json's "step". The Status names the folder or file
// and the first problem.
Status VerifyCheckpoint(const std::string& dir, bool check_hashes = true);

// The step of a "checkpoint_step_<N>" folder name; -1 for anything else (including .partial).
int64_t CheckpointStepFromName(const std::string& name);

struct CheckpointEntry {
  std::string path;
  int64_t step = -1;
  bool valid = false;
  bool finite = false;  // valid, and its manifest says the state was checked finite
  std::string problem;  // why it is not valid (empty when valid)
};

// Every checkpoint_step_<N> folder under `checkpoints_dir`, newest step first, each verified.
// `.partial` folders are never listed.
std::vector<CheckpointEntry> ListCheckpoints(const std::string& checkpoints_dir,
                                             bool check_hashes = true);

}  // namespace baton
