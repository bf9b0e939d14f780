// ImportLeRobot: LeRobot v2.1 datasets + upstream's per-segment latent files -> one baton dataset
// (format version 2, docs/dataset_format.md), holding exactly the samples upstream's loader would
// feed: one episode per `action_config` segment, latents laid out by the profile, actions and
// mask through upstream's transform, the first camera's text stored once per distinct content,
// and meta/empty_text.safetensors from empty_emb.pt.
//
// Writes are ordered so that nothing half-written is ever taken for a dataset: episode and text
// files atomically first, then meta/empty_text.safetensors, meta/info.json and the report, and
// meta/episodes.jsonl last. A rerun on the same inputs (same input fingerprint) is a no-op; a
// rerun after a kill keeps every episode file already written for the same inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/status.h"
#include "trainer/lerobot/import_profile.h"

namespace baton {

struct ImportOptions {
  std::vector<std::string> srcs;
  std::string out;
  std::string empty_emb;  // default: the first --src's empty_emb.pt
  int workers = 1;
  bool overwrite = false;     // replace an import of other inputs in --out
  bool skip_invalid = false;  // a segment failing a check is a counted skip, not an error
  bool dedupe_text = true;    // false: every episode keeps its own text (bench only)
};

struct ImportSkip {
  std::string id, check, message;
};

struct ImportReport {
  bool up_to_date = false;  // the output already held this import: nothing written
  std::string fingerprint;  // of the inputs (profile, paths, sizes, mtimes)
  int64_t datasets = 0, episodes = 0, segments = 0, imported = 0, reused = 0;
  int64_t distinct_texts = 0;
  int64_t bytes_read = 0, bytes_written = 0;
  std::vector<ImportSkip> skips;
  nlohmann::ordered_json ToJson() const;
};

// Code::kData naming the file and check for bad inputs (exit 65), kInvalidArgument for an output
// folder holding something else, kConfig never (the profile is loaded by the caller).
Result<ImportReport> ImportLeRobot(const ImportOptions& o, const ImportProfile& p);

}  // namespace baton
