// DatasetIndex: a dataset folder's metadata — which episodes exist, how long each is, and the
// tensor sizes every episode shares. Format: docs/dataset_format.md.
//
//   <dir>/meta/episodes.jsonl   one JSON object per line: {"id", "n_video", "file"[, "text"]}
//   <dir>/meta/info.json        optional: format version and shared sizes (channels, height, ...)
//   <dir>/<file>                one safetensors file per episode
//   <dir>/<text>                version 2: a text embedding shared by the episodes naming it
//
// Episode length F = (n_video - 1) // 4 + 1 latent frames comes from metadata alone, so the
// sampler can plan an epoch without opening a single episode file. Immutable after loading.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

// Latent frames of an episode of `n_video` video frames (the VAE's 4x temporal compression).
inline int64_t EpisodeLatentFrames(int64_t n_video) { return (n_video - 1) / 4 + 1; }

struct EpisodeMeta {
  std::string id;
  int64_t n_video = 0;
  std::string file;  // relative to the dataset folder
  // Version 2: the file holding this episode's `text` tensor (relative to the dataset folder),
  // shared by every episode with the same text; empty when the episode file holds its own.
  std::string text;
  int64_t frames = 0;  // latent frames F
};

// The length a batch is bucketed by. Today F; a human-video prefix length would join it here.
inline int64_t BucketKey(const EpisodeMeta& e) { return e.frames; }

// Sizes shared by every episode: latents [C, F, H, W], actions and actions_mask [A, F, N],
// text [L, Dt].
struct DatasetShape {
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t action_dim = 0;
  int64_t action_steps = 0;
  int64_t text_len = 0;
  int64_t text_dim = 0;
  bool operator==(const DatasetShape& o) const;
  std::string ToString() const;
};

struct DatasetIndex {
  std::string dir;
  std::vector<EpisodeMeta> episodes;
  std::optional<DatasetShape> shape;  // from meta/info.json when present
  int version = 1;                    // meta/info.json's "version" (1 when absent)
  // XXH3-64 (16 hex digits) of the index as read: every episode's id, n_video and file in order,
  // and the shared sizes. An exact resume compares it with the checkpoint's, so a run never
  // continues its data position on another dataset. Episode file contents are not hashed (that
  // would read the whole dataset at every start).
  std::string fingerprint;

  std::vector<int64_t> BucketKeys() const;
  std::string EpisodePath(int64_t i) const;
  // Where episode i's text tensor lives: its text file (version 2) or its episode file.
  std::string TextPath(int64_t i) const;
};

// The newest dataset format version this build reads and writes.
constexpr int kDatasetFormatVersion = 2;

// Reads meta/episodes.jsonl (and meta/info.json if present). Code::kData naming file:line for a
// malformed line, a missing field, n_video < 1, a repeated id, an empty index, a format version
// newer than kDatasetFormatVersion, or a LeRobot dataset (which must be imported first);
// kNotFound when the folder or the index file is missing.
Result<DatasetIndex> LoadDatasetIndex(const std::string& dir);

// The JSON line / document the writers emit (synth-data, converters).
std::string EpisodeMetaJson(const EpisodeMeta& e);
std::string DatasetShapeJson(const DatasetShape& s, int version = 1);

}  // namespace baton
