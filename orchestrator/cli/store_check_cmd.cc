// `baton store check [--repair]`: the store's rows that point at rows that are not there
// (orchestrator/store/store_check.h), named; with --repair, deleted in one transaction and
// reported. Opens $BATON_HOME/baton.db without migrating it, so it also works on a store that
// every other command refuses (a migration stopped on such rows). Exit codes: 0 nothing dangles
// (or the repair removed it all), 65 rows dangle and --repair was not given, 74 no database,
// 69 another process holds the write lock.
#include <iostream>
#include <memory>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/store/store.h"
#include "orchestrator/store/store_check.h"
#include "orchestrator/store/store_spec.h"
#include "schema/exit_codes.h"

namespace baton {

namespace {

void PrintDangling(const DanglingReference& d) {
  std::cout << "  " << d.table << "." << d.column << " → " << d.parent << ": " << d.count << " row"
            << (d.count == 1 ? "" : "s") << " name no row of " << d.parent
            << (d.sets_null ? " (the repair sets " + d.column + " NULL)" : std::string()) << "\n";
  for (const auto& [key, missing] : d.rows) {
    std::cout << "    " << d.table << " (" << key << "): " << d.column << " " << missing << "\n";
  }
  if (d.count > static_cast<int64_t>(d.rows.size())) {
    std::cout << "    ... " << d.count - static_cast<int64_t>(d.rows.size()) << " more\n";
  }
}

int RunStoreCheck(bool repair) {
  const std::string path = ScrubPassword(DefaultDbPath());
  Result<StoreCheckReport> report = CheckStoreFile(DefaultDbPath(), repair);
  if (!report.ok()) return ReportError(report.status());
  if (report->dangling.empty()) {
    std::cout << path << ": ok, every reference names a row that is there\n";
    return kExitOk;
  }
  std::cout << path << ": " << report->dangling_rows() << " row"
            << (report->dangling_rows() == 1 ? "" : "s") << " point at rows that are not there"
            << (report->repaired ? " (repaired)" : "") << ":\n";
  for (const DanglingReference& d : report->dangling) PrintDangling(d);
  if (!report->repaired) {
    std::cerr << "baton: " << path
              << ": dangling rows; `baton store check --repair` deletes them (and what belongs "
                 "to them) in one transaction\n";
    return kExitData;
  }
  std::cout << "removed:";
  if (report->removed.empty()) std::cout << " nothing (only references set NULL)";
  for (size_t i = 0; i < report->removed.size(); ++i) {
    std::cout << (i ? "," : "") << " " << report->removed[i].second << " row"
              << (report->removed[i].second == 1 ? "" : "s") << " of " << report->removed[i].first;
  }
  std::cout << "\nnothing dangles now\n";
  return kExitOk;
}

}  // namespace

void AddStoreCommand(CLI::App& app, int* rc) {
  CLI::App* store = app.add_subcommand("store", "Check or copy the run-history database");
  store->require_subcommand(1);
  auto repair = std::make_shared<bool>(false);
  CLI::App* check =
      store->add_subcommand("check", "List rows that point at rows that are not there");
  check->add_flag("--repair", *repair,
                  "Delete them (and what belongs to them) in one transaction, and say which");
  check->callback([repair, rc] { *rc = RunStoreCheck(*repair); });
  AddStoreCopyCommand(*store, rc);
}

}  // namespace baton
