// The importer's fingerprints: what decides that an output already holds an import (the input
// fingerprint, over the profile, the options and every input file's identity) and that one
// episode file from an earlier run may be kept (the segment source hash). Files are identified by
// path, size and mtime, never read; the text files of a deduplicated import are named by the
// hash of their content. XXH3; pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "trainer/lerobot/import_profile.h"
#include "trainer/lerobot/lerobot_importer.h"
#include "trainer/lerobot/lerobot_meta.h"
#include "trainer/lerobot/pth_segment.h"

namespace baton {

// One LeRobot episode to import, and the id prefix of its segments (<src name>/<relpath>).
struct ImportUnit {
  const LeRobotDataset* ds;
  const LeRobotEpisode* ep;
  std::string id_prefix;
};

// Of the import's inputs: the profile's bytes, the options that change the output, empty_emb and
// every dataset's metadata, parquet and latent file.
std::string InputFingerprint(const ImportOptions& o, const ImportProfile& p,
                             const std::vector<LeRobotDataset>& datasets,
                             const std::vector<ImportUnit>& units, const std::string& empty_emb);

// Of what one segment's episode file was made from (its parquet, its camera files, the episode's
// length, the profile and the text mode), stored in the file as "source".
std::string SegmentSourceHash(const ImportOptions& o, const ImportProfile& p,
                              const std::string& parquet_path, int64_t episode_length,
                              const std::vector<std::string>& cams);

// 32 hex digits of a tensor's dtype, shape and bytes: a deduplicated text file's name.
std::string ContentHash(const RawTensor& t);

}  // namespace baton
