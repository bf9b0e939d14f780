// `baton store copy --from SPEC --to SPEC [--owner U] [--merge]`: a history moved from one store
// to another (orchestrator/store/store_copy.h; docs/team.md, "Moving a history"), SQLite or
// PostgreSQL either way round. Prints what went over, one line per table. Exit codes: 0 copied,
// 73 the target already holds rows and --merge was not given (nothing written), 64 a bad spec or
// one store named twice, 65 a source of another schema version or a run already in the target
// under --merge, 69 a server that cannot be reached, 74 no SQLite source at the path.
#include <iostream>
#include <memory>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/store/store_copy.h"
#include "schema/exit_codes.h"

namespace baton {

namespace {

std::string Rows(int64_t n) { return std::to_string(n) + (n == 1 ? " row" : " rows"); }

int RunStoreCopy(const StoreCopyOptions& o) {
  Result<StoreCopyReport> report = CopyStore(o);
  if (!report.ok()) return ReportError(report.status());
  if (report->refused()) {
    std::cerr << "baton: target " << report->to << " is not empty (";
    for (size_t i = 0; i < report->target_rows.size(); ++i) {
      std::cerr << (i ? ", " : "") << Rows(report->target_rows[i].second) << " of "
                << report->target_rows[i].first;
    }
    std::cerr << "); nothing was copied. Copy into an empty store, or add --merge to add this "
                 "history beside the one there (new ids, runs kept apart)\n";
    return kExitTargetNotEmpty;
  }
  std::cout << "copied " << report->from << " → " << report->to
            << (o.owner.empty() ? "" : " (runs of " + o.owner + ")")
            << (o.merge ? ", merged with new ids" : "") << ", schema version "
            << report->schema_version << ":\n";
  for (const TableCopyCount& t : report->tables) {
    std::cout << "  " << t.table << ": " << Rows(t.copied);
    if (t.reused > 0) std::cout << ", " << t.reused << " already there (the target's kept)";
    if (t.kept_target > 0) std::cout << ", " << t.kept_target << " left out (the target's kept)";
    std::cout << "\n";
  }
  return kExitOk;
}

}  // namespace

void AddStoreCopyCommand(CLI::App& store, int* rc) {
  auto o = std::make_shared<StoreCopyOptions>();
  CLI::App* copy = store.add_subcommand(
      "copy", "Copy a history into another store (SQLite or PostgreSQL), in one transaction");
  copy->add_option("--from", o->from, "The store to read: sqlite:PATH or postgresql://...")
      ->required();
  copy->add_option("--to", o->to, "The store to write: sqlite:PATH or postgresql://...")
      ->required();
  copy->add_option("--owner", o->owner,
                   "Only this user's runs and what belongs to them (incidents, sweeps, nodes)");
  copy->add_flag("--merge", o->merge,
                 "Add to a target that already holds a history: new ids, runs kept apart");
  copy->callback([o, rc] { *rc = RunStoreCopy(*o); });
}

}  // namespace baton
