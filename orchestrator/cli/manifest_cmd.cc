// `baton manifest write DIR --step N [--kind full|weights_only] [--world-size W]
// [--config-hash H]` and `baton manifest verify DIR`: hidden helpers that let scripts (the
// integration tests' fake trainer) produce and check checkpoints exactly as the trainer does,
// with schema/checkpoint_manifest.
#include <filesystem>
#include <iostream>
#include <memory>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "schema/checkpoint_manifest.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

struct ManifestOptions {
  std::string dir;
  int64_t step = 0;
  std::string kind = "full";
  int64_t world_size = 1;
  std::string config_hash;
};

int RunManifestWrite(const ManifestOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.dir, ec))
    return ReportError(Status::NotFound(o.dir + ": no such folder"));
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(o.dir, ec)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), o.dir).string();
    if (rel == kManifestName) continue;
    files.push_back(rel);
  }
  std::sort(files.begin(), files.end());
  CheckpointManifest m;
  m.step = o.step;
  m.kind = o.kind;
  m.world_size = o.world_size;
  m.config_hash = o.config_hash;
  if (Status st = WriteManifest(o.dir, m, files); !st.ok()) return ReportError(st);
  return 0;
}

int RunManifestVerify(const std::string& dir) {
  Status st = VerifyCheckpoint(dir, /*check_hashes=*/true);
  if (!st.ok()) return ReportError(st);
  std::cout << dir << ": valid\n";
  return 0;
}

}  // namespace

void AddManifestCommand(CLI::App& app, int* rc) {
  CLI::App* cmd = app.add_subcommand("manifest", "");  // empty help: hidden from --help
  cmd->group("");
  cmd->require_subcommand(1);
  auto o = std::make_shared<ManifestOptions>();
  CLI::App* write = cmd->add_subcommand("write", "Write DIR/MANIFEST.json over every file in DIR");
  write->add_option("dir", o->dir, "Checkpoint folder")->required();
  write->add_option("--step", o->step, "Optimizer step")->required();
  write->add_option("--kind", o->kind, "full | weights_only")
      ->check(CLI::IsMember({"full", "weights_only"}));
  write->add_option("--world-size", o->world_size, "Ranks that wrote it");
  write->add_option("--config-hash", o->config_hash, "Config hash");
  write->callback([o, rc] { *rc = RunManifestWrite(*o); });
  auto vdir = std::make_shared<std::string>();
  CLI::App* verify = cmd->add_subcommand("verify", "Check DIR against its manifest");
  verify->add_option("dir", *vdir, "Checkpoint folder")->required();
  verify->callback([vdir, rc] { *rc = RunManifestVerify(*vdir); });
}

}  // namespace baton
