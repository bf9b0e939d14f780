// StoreCheck: the rows of a store that point at rows that are not there (a dangling foreign key:
// a step whose attempt was deleted while foreign keys were off, a copy of part of a database),
// named, and their repair. `baton store check [--repair]` (cli/store_check_cmd.cc) and the
// migrations that rebuild a table (store.cc: they stop on such rows and say so) share it.
//
// The references are the schema's own (SchemaReferences(), checked against every REFERENCES
// clause of schema/sql by the store's test); a table the database's version does
// not have yet is skipped. The check reads only. The repair runs in one write transaction: it
// deletes each dangling row (checkpoints.attempt_id, which the schema sets NULL when its attempt
// goes, is set NULL instead), with foreign keys on, so what belongs to a deleted row goes with
// it, then checks again; it commits only once nothing dangles. Works on a database the store
// cannot open (Store::Open would stop in its migration), so it opens the file itself, without
// migrating. Portable SQL only; thread-compatible (one call, one connection).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "orchestrator/store/db.h"
#include "schema/status.h"

namespace baton {

// Dangling rows named per reference (the rest are counted).
inline constexpr int64_t kListedDanglingRows = 20;

// One reference with rows that dangle: `count` rows of `table` whose `column` names no row of
// `parent`; `rows` the first kListedDanglingRows of them, each as its key ("attempt_id 12,
// step 40") and the missing id.
struct DanglingReference {
  std::string table, column, parent;
  int64_t count = 0;
  std::vector<std::pair<std::string, int64_t>> rows;
  bool sets_null = false;  // the repair sets the column NULL rather than deleting the row
};

struct StoreCheckReport {
  std::vector<DanglingReference> dangling;  // as found (before any repair)
  bool repaired = false;
  // After a repair: rows removed per table ("steps", 40), those that dangled and those that
  // belonged to them (a deleted attempt's steps).
  std::vector<std::pair<std::string, int64_t>> removed;
  int64_t dangling_rows() const;
};

// One foreign key of the schema: `table`.`column` names a row of `parent` by its id; `key` the
// table's key columns (how a row is named), `nullable` when the schema sets it NULL on delete.
struct SchemaReference {
  const char* table;
  const char* column;
  const char* parent;
  const char* key;  // "attempt_id, step"
  bool nullable;
};
// Parents before children: an attempt deleted first takes its steps with it.
const std::vector<SchemaReference>& SchemaReferences();

// The dangling rows of the open database `db`, read inside whatever transaction is open.
[[nodiscard]] Result<std::vector<DanglingReference>> FindDanglingRows(Db& db);

// "steps (attempt_id 12, step 40) → attempts 12 is not there; ..." for the first `max` rows.
std::string DanglingRowsText(const std::vector<DanglingReference>& dangling, size_t max);

// Checks (and with `repair`, repairs) the database file at `path`. Code::kIo when there is no
// file there; Code::kUnavailable when another process holds the write lock past the timeout.
[[nodiscard]] Result<StoreCheckReport> CheckStoreFile(const std::string& path, bool repair);

}  // namespace baton
