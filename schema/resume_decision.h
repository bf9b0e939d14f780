// DecideResume: which checkpoint a segment resumes from, in which mode, from which step. The
// launcher decides before it starts the trainer (and records it in attempt_start); the trainer
// decides again with the same function from the same folder and refuses to start (exit 78) when
// the two disagree, so a run folder that changed in between is caught instead of trusted.
//
//   from "none"             -> fresh,        step0 0, no resume warmup
//   from "auto"             -> the newest *valid* checkpoint (ListCheckpoints: manifest present,
//                              every file with its size and XXH3 hash); each newer invalid one is
//                              skipped with the reason
//   from a folder           -> that folder (no manifest: an upstream-style weights-only folder,
//                              step0 from its name checkpoint_step_<N>)
//   kind "full"             -> exact:        step0 = its step, no resume warmup (bit-for-bit)
//   kind "weights_only", or weights_only requested
//                           -> weights_only: step0 = its step, resume warmup K
// Why only weights-only resumes re-warm: docs/design.md. Pure function of the filesystem and
// the request; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/status.h"
#include "schema/vocabularies.h"

namespace baton {

enum class ResumeMode { kFresh, kExact, kWeightsOnly };
template <>
struct Vocabulary<ResumeMode> {
  static constexpr Word<ResumeMode> kWords[] = {{ResumeMode::kFresh, "fresh"},
                                                {ResumeMode::kExact, "exact"},
                                                {ResumeMode::kWeightsOnly, "weights_only"}};
};

struct ResumeRequest {
  std::string from = "auto";        // auto | none | a checkpoint folder
  bool weights_only = false;        // load weights alone even from a full checkpoint
  int64_t resume_warmup_steps = 0;  // K of a weights-only resume (optim.resume_warmup_steps)
};

struct ResumeDecision {
  ResumeMode mode = ResumeMode::kFresh;
  std::string checkpoint;  // absolute folder, "" for fresh
  int64_t step0 = 0;
  int64_t resume_warmup_steps = 0;   // K when weights_only, else 0
  std::vector<std::string> skipped;  // "<folder>: <why>" for each newer checkpoint not used
};

// InvalidArgument (exit 78) for a named folder that does not exist or whose step cannot be
// known; Data (exit 65) for a checkpoint of an older format version found by auto (it must be
// converted with `baton-train ckpt upgrade`, not skipped into a fresh start); every other
// problem with a checkpoint makes it skipped, not an error.
[[nodiscard]] Result<ResumeDecision> DecideResume(const std::string& checkpoints_dir,
                                                  const ResumeRequest& request);

}  // namespace baton
