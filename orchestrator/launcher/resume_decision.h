// DecideResume: which checkpoint a new attempt resumes from, in which mode, from which step.
//
// The newest *valid* checkpoint under <run_dir>/checkpoints wins (baton::ListCheckpoints:
// manifest present, every file with its size and XXH3 hash); each newer invalid one is skipped
// with the reason, which the launcher logs and records. Mode follows the manifest's kind:
//   none               -> fresh,        step0 0, no resume warmup
//   kind "full"        -> exact,        step0 = its step, no resume warmup (bit-for-bit resume)
//   kind "weights_only"-> weights_only, step0 = its step, optim.resume_warmup_steps
// Pure function of the filesystem and the config; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/run_config.h"
#include "schema/status.h"

namespace baton {

struct ResumeDecision {
  std::string mode = "fresh";  // fresh | exact | weights_only
  std::string checkpoint;      // absolute folder, "" for fresh
  int64_t step0 = 0;
  int64_t resume_warmup_steps = 0;
  std::vector<std::string> skipped;  // "<folder>: <why>" for each newer checkpoint not used
};

[[nodiscard]] Result<ResumeDecision> DecideResume(const std::string& checkpoints_dir,
                                                  const RunConfig& config);

}  // namespace baton
