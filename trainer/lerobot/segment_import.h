// The importer's segment phase: one LeRobot episode's segments into baton episode files. For
// each segment, in order: every camera's latent file present (else a `missing_camera` skip),
// reuse of the episode file an earlier run wrote from the same inputs, the episode's parquet
// (read once, on the first segment that needs it) with LeRobot's length and timestamp checks,
// then the camera files, upstream's checks, layout and action transform, and the write: the
// text file (content-addressed, once per distinct text) before the episode file, both atomic.
//
// A failed check is a counted skip under --skip-invalid and an error otherwise. Called from the
// import's worker threads, one episode per call; what workers share (texts/) is behind
// SegmentImportContext::text_mu.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "schema/status.h"
#include "trainer/data/dataset_index.h"
#include "trainer/lerobot/import_fingerprint.h"
#include "trainer/lerobot/import_profile.h"
#include "trainer/lerobot/lerobot_importer.h"

namespace baton {

// What one segment became: an episode (imported or reused), a skip, or nothing (the import
// stopped before it).
struct SegmentResult {
  std::optional<EpisodeMeta> meta;
  DatasetShape shape;
  bool reused = false;
  std::optional<ImportSkip> skip;
  int64_t bytes_read = 0, bytes_written = 0;
};

struct SegmentImportContext {
  const ImportOptions& options;
  const ImportProfile& profile;
  std::filesystem::path out;
  std::mutex& text_mu;            // one writer of texts/ at a time
  const std::atomic<bool>& stop;  // another worker failed: leave the rest undone
};

// Imports the segments of `unit` into `*results` (one per segment). The first error ends the
// episode and is returned; `*current` names the file in hand, for a message about an exception
// escaping a reader.
Status ImportEpisode(const SegmentImportContext& ctx, const ImportUnit& unit,
                     std::vector<SegmentResult>* results, std::string* current);

// The size of the file at `path` in bytes; 0 when it cannot be read.
int64_t FileBytes(const std::string& path);

}  // namespace baton
