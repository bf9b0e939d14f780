#include "schema/resume_decision.h"

#include <filesystem>

#include "schema/checkpoint_manifest.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

// Mode and step of one checkpoint folder the caller chose or found valid.
Result<ResumeDecision> FromFolder(const std::string& dir, const ResumeRequest& request) {
  ResumeDecision d;
  d.checkpoint = dir;
  Result<CheckpointManifest> m = ReadManifest(dir);
  if (m.ok()) {
    d.step0 = m->step;
    d.mode = (m->kind == "full" && !request.weights_only) ? ResumeMode::kExact
                                                          : ResumeMode::kWeightsOnly;
  } else {
    // No manifest: weights alone (an upstream checkpoint); the step is in the folder's name.
    d.step0 = CheckpointStepFromName(fs::path(dir).filename().string());
    if (d.step0 < 0) {
      return Status::InvalidArgument(dir + ": a checkpoint without " + kManifestName +
                                     " is resumed weights only and takes step0 from a folder named "
                                     "checkpoint_step_<N>");
    }
    d.mode = ResumeMode::kWeightsOnly;
  }
  if (d.mode == ResumeMode::kWeightsOnly) d.resume_warmup_steps = request.resume_warmup_steps;
  return d;
}

}  // namespace

Result<ResumeDecision> DecideResume(const std::string& checkpoints_dir,
                                    const ResumeRequest& request) {
  if (request.from == "none") return ResumeDecision{};
  std::error_code ec;
  if (request.from != "auto") {
    if (!fs::is_directory(request.from, ec)) {
      return Status::InvalidArgument("--resume " + request.from + ": no such checkpoint folder");
    }
    return FromFolder(fs::absolute(request.from, ec).lexically_normal().string(), request);
  }
  std::vector<std::string> skipped;
  const std::string dir = fs::absolute(checkpoints_dir, ec).string();
  for (const CheckpointEntry& c : ListCheckpoints(dir, /*check_hashes=*/true)) {
    if (!c.valid) {
      // A checkpoint of an older format is the run's own state, not damage: skipping it would
      // start the run over. Refuse until it is converted.
      Result<CheckpointManifest> m = ReadManifest(c.path);
      if (m.ok() && m->format_version >= 1 && m->format_version < kCheckpointFormatVersion) {
        return Status::Data(c.path + ": " + c.problem);
      }
      skipped.push_back(c.path + ": " + c.problem);
      continue;
    }
    Result<ResumeDecision> d = FromFolder(c.path, request);
    if (!d.ok()) {
      skipped.push_back(c.path + ": " + d.status().message());
      continue;
    }
    d->skipped = std::move(skipped);
    return d;
  }
  ResumeDecision fresh;
  fresh.skipped = std::move(skipped);
  return fresh;
}

}  // namespace baton
