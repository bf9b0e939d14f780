// The copy plan of `baton store copy` (store_copy.h): for every table of the schema, how its rows
// move from one store to another — in which order, which of its columns are ids the copy maps
// under --merge and which name ids of other tables, which rows `--owner U` keeps, and what a
// row does that the target already has (by the table's natural key). One entry per table of
// schema/sql/; a table without an entry stops the copy (CopyPlan() is checked against the
// database's own table list), so a new migration cannot be copied half. docs/team.md says why
// each table is treated as it is. Pure data; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace baton {

// How a column refers to another table's id.
enum class RefKind {
  kForeignKey,  // a declared REFERENCES: must name a copied row (NULL stays NULL)
  kSoft,        // an id the schema does not declare; 0 means none and stays 0
  kSigned,      // step_rollups.attempt_id: the attempt's id, negated for its superseded rows
};

struct CopyRef {
  const char* column;
  const char* parent;  // the table whose `id` it names
  RefKind kind;
};

// What --merge does with a row whose natural key the target already has.
enum class OnMatch {
  kNone,        // cannot happen (the key holds a mapped id), or the table has no natural key
  kRefuse,      // stop the copy, naming the row (a run already in the target)
  kReuse,       // map the row's id to the target's row and insert nothing (a node)
  kKeepTarget,  // keep the target's row, skip this one (a token, a cached probe)
};

struct CopyTable {
  const char* name;
  const char* order;  // its primary key: rows are read (and ids assigned) in this order
  bool has_id;        // an `id INTEGER PRIMARY KEY` column, new in the target under --merge
  std::vector<CopyRef> refs;
  // The rows --owner keeps: a condition where ?1 is the owner; "" = the table is not copied
  // under --owner at all.
  const char* owner_where;
  const char* match_key;  // natural key columns checked under --merge ("" = none)
  OnMatch on_match;
};

// Parents before children (foreign keys are checked as each row goes in).
const std::vector<CopyTable>& CopyPlan();

// The plan's entry for `table`, or nullptr.
const CopyTable* FindCopyTable(const std::string& table);

// Columns of a comma-separated list ("attempt_id, step").
std::vector<std::string> SplitColumns(const std::string& list);

}  // namespace baton
