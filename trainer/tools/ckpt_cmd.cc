// `baton-train ckpt verify DIR` and `ckpt list RUN_DIR`: checkpoint validation without loading
// (manifest, sizes, XXH3 hashes, format version); `ckpt upgrade DIR` lives in
// ckpt_upgrade_cmd.cc.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/run_folder.h"
#include "trainer/tools/commands.h"

namespace baton {

void RegisterCkpt(CLI::App& app, CommandFn* selected) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("ckpt", "Inspect checkpoints");
  cmd->require_subcommand(1);
  CLI::App* verify =
      cmd->add_subcommand("verify", "Check a checkpoint folder (exit 65 when invalid)");
  verify->add_option("dir", *dir, "checkpoint_step_<N> folder")->required();
  verify->callback([=] {
    *selected = [=]() -> int {
      const Status st = VerifyCheckpoint(*dir);
      if (!st.ok()) {
        std::fprintf(stderr, "invalid: %s\n", st.message().c_str());
        return kExitData;
      }
      std::printf("valid: %s\n", dir->c_str());
      return kExitOk;
    };
  });
  AddCkptUpgrade(cmd, selected);
  CLI::App* list = cmd->add_subcommand("list", "List a run's checkpoints, newest first");
  list->add_option("run_dir", *dir, "Run directory")->required();
  list->callback([=] {
    *selected = [=]() -> int {
      for (const auto& c : ListCheckpoints(RunFolder{*dir}.CheckpointsDir())) {
        std::printf("%8lld  %-7s %s%s%s\n", (long long)c.step, c.valid ? "valid" : "INVALID",
                    c.path.c_str(), c.valid ? "" : "  ", c.problem.c_str());
      }
      return kExitOk;
    };
  });
}

}  // namespace baton
