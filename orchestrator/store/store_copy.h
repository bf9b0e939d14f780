// StoreCopy: `baton store copy --from SPEC --to SPEC [--owner U] [--merge]` — a whole history (or
// one owner's runs and everything that hangs off them) moved from one store to another, SQLite
// or PostgreSQL either way round (docs/team.md, "Moving a history").
//
// The source is opened without migrating and only read, in one read snapshot; it must be at the
// schema version this baton writes (another version is refused, naming both). The target is
// opened as every command opens it (created and migrated to the current schema), then written
// in one write transaction: a copy that fails anywhere leaves the target as it was. A target that
// already holds rows is refused (nothing written) unless `merge`: then every id is new in the
// target and every reference to it rewritten, so the two histories stay apart. Without `merge`
// ids are kept, so `baton ls --json` and `baton show --json` read the same on both. Every table
// of the schema follows its entry in the copy plan (store_copy_plan.h). Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "schema/status.h"

namespace baton {

struct StoreCopyOptions {
  std::string from;   // a store spec (store_spec.h)
  std::string to;     // a store spec
  std::string owner;  // '' = every run
  bool merge = false;
};

struct TableCopyCount {
  std::string table;
  int64_t copied = 0;       // rows written to the target
  int64_t kept_target = 0;  // --merge: the target's row kept, the source's left out
  int64_t reused = 0;       // --merge: the target's row stands for the source's (a node)
};

struct StoreCopyReport {
  std::string from, to;  // as shown (passwords scrubbed)
  int64_t schema_version = 0;
  // Per table of the plan, in its order.
  std::vector<TableCopyCount> tables;
  // Set when the target already held rows and `merge` was not asked: the tables that hold them
  // and how many. Nothing was written.
  std::vector<std::pair<std::string, int64_t>> target_rows;
  bool refused() const { return !target_rows.empty(); }
  int64_t copied(const std::string& table) const;
};

// Copies as above. Errors: Code::kInvalidArgument for a bad spec or --from and --to naming one
// store; kIo for a SQLite source that is not there; kData for a source of another schema version
// (or a target newer than this baton); kUnavailable for a server that cannot be reached or a
// lock held too long; kData for a source row that names a row the source does not have.
[[nodiscard]] Result<StoreCopyReport> CopyStore(const StoreCopyOptions& options);

}  // namespace baton
