// `baton-train import-lerobot`: LeRobot v2.1 datasets with upstream's latent files -> a baton
// dataset (trainer/lerobot/lerobot_importer.h, docs/lerobot_import.md).
#include <iostream>
#include <memory>

#include "trainer/lerobot/lerobot_importer.h"
#include "trainer/tools/commands.h"

namespace baton {

namespace {
struct Args {
  ImportOptions opt;
  std::string profile;
  bool json = false;
};
}  // namespace

void RegisterImportLeRobot(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "import-lerobot", "Import LeRobot v2.1 datasets with precomputed latents as a baton dataset");
  cmd->add_option("--src", a->opt.srcs,
                  "Folder searched for LeRobot datasets (meta/info.json); repeatable")
      ->required();
  cmd->add_option("--out", a->opt.out, "Baton dataset folder to write")->required();
  cmd->add_option("--profile", a->profile, "Import profile YAML (configs/import/*.yaml)")
      ->required();
  cmd->add_option("--workers", a->opt.workers, "Episodes imported in parallel")
      ->capture_default_str();
  cmd->add_option("--empty-emb", a->opt.empty_emb,
                  "The empty-prompt embedding (default: <first --src>/empty_emb.pt)");
  cmd->add_flag("--skip-invalid", a->opt.skip_invalid,
                "Count a segment failing a check as a skip instead of stopping (exit 65)");
  cmd->add_flag("--overwrite", a->opt.overwrite, "Replace a dataset of other inputs in --out");
  cmd->add_flag("--text-dedupe,!--no-text-dedupe", a->opt.dedupe_text,
                "Store each distinct text once (default); --no-text-dedupe keeps one per episode");
  cmd->add_flag("--json", a->json, "Print the import report as one JSON object");
  cmd->callback([=] {
    *selected = [=]() -> int {
      if (a->opt.workers < 1 || a->opt.workers > 1024) {
        std::cerr << "baton-train import-lerobot: --workers must be in [1, 1024]\n";
        return kExitUsage;
      }
      auto fail = [](const Status& st) {
        std::cerr << "baton-train import-lerobot: " << st.ToString() << "\n";
        return st.code() == Code::kNotFound ? kExitData : st.exit_code();
      };
      auto profile = LoadImportProfile(a->profile);
      if (!profile.ok()) return fail(profile.status());
      auto report = ImportLeRobot(a->opt, profile.value());
      if (!report.ok()) return fail(report.status());
      const ImportReport& r = report.value();
      if (a->json) {
        std::cout << r.ToJson().dump() << "\n";
        return kExitOk;
      }
      if (r.up_to_date) {
        std::cout << a->opt.out << " is up to date (" << r.imported
                  << " episodes from the same inputs)\n";
        return kExitOk;
      }
      std::cout << "imported " << r.imported << " segments (" << r.reused
                << " kept from an earlier run) of " << r.segments << " from " << r.datasets
                << " LeRobot dataset(s) into " << a->opt.out << "; " << r.distinct_texts
                << " distinct text(s)\n";
      for (const auto& s : r.skips)
        std::cout << "skipped " << s.id << ": " << s.check << ": " << s.message << "\n";
      return kExitOk;
    };
  });
}

}  // namespace baton
