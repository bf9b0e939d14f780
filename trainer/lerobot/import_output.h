// The importer's output phases: taking --out (its lock, stale temp files, and the reuse check
// that makes a rerun on the same inputs a no-op) and, once every segment is done, writing the
// dataset's metadata in the order that keeps a half-written output from being taken for a
// dataset: meta/empty_text.safetensors, meta/info.json and the report, meta/episodes.jsonl last.
// Single-threaded (the segment workers have ended before WriteImportedDataset).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "schema/status.h"
#include "trainer/lerobot/import_profile.h"
#include "trainer/lerobot/lerobot_importer.h"
#include "trainer/lerobot/pth_segment.h"
#include "trainer/lerobot/segment_import.h"

namespace baton {

// The output folder's lock: one import writes into an --out at a time. Released by the kernel
// when the process ends, however it ends.
class OutputLock {
 public:
  OutputLock() = default;
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  // kInvalidArgument when another import holds it.
  Status Take(const std::filesystem::path& out);
  static constexpr const char* kLockFile = ".import-lerobot.lock";

 private:
  int fd_ = -1;
};

// Creates --out and takes `*lock`, removes what a killed import left, and decides: the report of
// the import already there when its input fingerprint is `fingerprint` (nothing to do);
// kInvalidArgument when --out holds another import and --overwrite is not given; otherwise
// nullopt, with the old index removed and the folders the segments write into made.
Result<std::optional<ImportReport>> OpenImportOutput(const ImportOptions& o,
                                                     const std::string& fingerprint,
                                                     OutputLock* lock);

// Checks that every imported segment has one shape, then writes the metadata and the index,
// filling the counts of `*report`. `empty` is the empty-prompt embedding read from `empty_emb`.
Status WriteImportedDataset(const ImportOptions& o, const ImportProfile& p,
                            const std::vector<std::vector<SegmentResult>>& results,
                            const RawTensor& empty, const std::string& empty_emb,
                            ImportReport* report);

}  // namespace baton
