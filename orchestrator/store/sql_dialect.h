// The SQL dialect: every difference between SQLite 3.40 and PostgreSQL 15 that the store's SQL
// meets, in one place. Store code writes one text for both (portable SQL: ON CONFLICT upserts,
// COALESCE, CASE for scalar min/max, RETURNING or Db::LastInsertId, times as numbers computed in
// C++); what cannot be written once is translated here:
//   - placeholders: `?N` and `?` become `$N` on PostgreSQL (outside literals and comments);
//   - a column named by a word PostgreSQL reserves (`offset`) is quoted where declared;
//   - migrations' column types: INTEGER -> BIGINT, REAL -> DOUBLE PRECISION, BLOB -> BYTEA,
//     `INTEGER PRIMARY KEY` -> an identity column (SQLite's rowid alias), WITHOUT ROWID dropped;
//   - the schema version: PRAGMA user_version on SQLite, table baton_schema_version on
//     PostgreSQL;
//   - a migration's PostgreSQL-only part (the "postgresql only" marker), left out on SQLite;
//   - a migration that rebuilds a referenced table (the foreign_keys=off marker): SQLite turns
//     foreign keys off around it and runs PRAGMA foreign_key_check; PostgreSQL drops the old
//     table with CASCADE and re-adds the dropped foreign keys, which re-validates every row.
// Text functions, and the two PostgreSQL steps around a migration; store.cc and the backends call
// them.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/store/db.h"

namespace baton {

// `?N` and `?` (numbered as SQLite numbers it: one past the largest so far) become `$1..$n`,
// dense in the order of the numbers used (PostgreSQL refuses a gap, e.g. an INSERT that leaves
// out ?1); `used`, when given, receives those SQLite numbers, so `$k` takes SQLite's used[k-1].
std::string PgPlaceholders(const std::string& sql, std::vector<int>* used = nullptr);
// A statement's text for PostgreSQL: placeholders as above, SQLite's index hints
// (`INDEXED BY name`, `NOT INDEXED`) dropped — PostgreSQL's planner picks the partial index —
// and instr() spelled strpos().
std::string PgStatementText(const std::string& sql, std::vector<int>* used = nullptr);

// A migration's text for `backend`: on SQLite without its PostgreSQL-only parts (below), on
// PostgreSQL with its types translated.
std::string MigrationText(Backend backend, const std::string& sql);
// `sql` without its PostgreSQL-only parts: each runs from a line that starts
// "-- baton-migration: postgresql only" to one that starts "-- baton-migration: end" (what
// PostgreSQL needs and SQLite does in-process, e.g. checks that SQLite's foreign keys make).
std::string WithoutPostgresOnlyParts(const std::string& sql);

// Whether a migration must run with foreign keys off: its first line is
// "-- baton-migration: foreign_keys=off" (it rebuilds a table others reference).
bool MigrationRunsWithForeignKeysOff(const std::string& sql);

// The names of the tables a migration drops (`DROP TABLE name`), in order.
std::vector<std::string> DroppedTables(const std::string& sql);

// SQL that reads whether the schema version is kept yet (one row, 0 or 1): always 1 on SQLite.
std::string HasSchemaVersionSql(Backend backend);
// SQL that reads the schema version as one row of one integer (no row = 0).
std::string SchemaVersionSql(Backend backend);

// SQL that sets the schema version to `version` (a number we own, so spliced).
std::string SetSchemaVersionSql(Backend backend, int64_t version);
// The schema version of the open database `db` (0 for one that keeps none yet).
[[nodiscard]] Result<int64_t> ReadSchemaVersion(Db& db);

// SQL that opens a read-only transaction whose reads all see one snapshot of the database.
std::string ReadSnapshotSql(Backend backend);
// SQL of the store's tables by name, one row each (SQLite's own and the version table left out).
std::string ListTablesSql(Backend backend);
// SQL of the columns of the table bound to ?1 in their order: name and declared type.
std::string ListColumnsSql(Backend backend);

// PostgreSQL, before a migration that drops `tables`: the SQL that re-adds every foreign key of
// another table that points at one of them (the drop's CASCADE removes those keys).
[[nodiscard]] Result<std::vector<std::string>> PgForeignKeysInto(
    Db& db, const std::vector<std::string>& tables);
// PostgreSQL, after a migration: re-adds `foreign_keys` (each re-checks every row, so a dangling
// row stops the migration) and moves every identity column's sequence past the largest id, so
// rows copied with their ids by a rebuild never collide with new ones.
[[nodiscard]] Status PgAfterMigration(Db& db, const std::vector<std::string>& foreign_keys);
// PostgreSQL: moves every identity column's sequence past the largest id of its table (after rows
// went in with their ids given: a rebuild, a copy).
[[nodiscard]] Status PgResetIdentitySequences(Db& db);

// PostgreSQL: one key for the advisory locks of the store (writes and migrations).
inline constexpr int64_t kPgWriteLockKey = 0x6261746f6e;  // "baton"
// PostgreSQL: the class of the per-run advisory locks (the two-key form, run id second), which
// never collide with the one-key locks above.
inline constexpr int32_t kPgRunLockClass = 0x62746e72;  // "btnr"

}  // namespace baton
