#include "orchestrator/launcher/resume_decision.h"

#include <filesystem>

#include "schema/checkpoint_manifest.h"

namespace baton {

Result<ResumeDecision> DecideResume(const std::string& checkpoints_dir, const RunConfig& config) {
  ResumeDecision d;
  std::error_code ec;
  const std::string dir = std::filesystem::absolute(checkpoints_dir, ec).string();
  for (const CheckpointEntry& c : ListCheckpoints(dir, /*check_hashes=*/true)) {
    if (!c.valid) {
      d.skipped.push_back(c.path + ": " + c.problem);
      continue;
    }
    Result<CheckpointManifest> m = ReadManifest(c.path);
    if (!m.ok()) {
      d.skipped.push_back(c.path + ": " + m.status().message());
      continue;
    }
    if (m->kind == "full") {
      d.mode = "exact";
      d.resume_warmup_steps = 0;
    } else if (m->kind == "weights_only") {
      d.mode = "weights_only";
      d.resume_warmup_steps = config.optim.resume_warmup_steps;
    } else {
      d.skipped.push_back(c.path + ": unknown manifest kind '" + m->kind + "'");
      continue;
    }
    d.checkpoint = c.path;
    d.step0 = c.step;
    return d;
  }
  return d;  // fresh
}

}  // namespace baton
