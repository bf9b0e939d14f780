// The row layer of `baton store copy` (store_copy.h): a table's columns as the database declares
// them, its rows read page by page in key order (keyset paging, so a table of millions of step
// rows never sits in memory at once on either backend), and rows written back in multi-row
// INSERTs. Values travel typed by their column's declared kind, so a double crosses backends bit
// for bit and a BLOB byte for byte. Table and column names come from the database's catalog and
// the copy plan, never from a user; values are always bound. Thread-compatible (one Db each).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/db.h"
#include "schema/status.h"

namespace baton {

enum class ColumnKind { kInt, kReal, kText, kBlob };

struct CopyColumn {
  std::string name;
  ColumnKind kind = ColumnKind::kText;
};

struct CopyValue {
  bool null = true;
  int64_t i = 0;
  double d = 0;
  std::string s;  // text or blob bytes
};
using CopyRow = std::vector<CopyValue>;

// The store's tables of `db`, by name.
[[nodiscard]] Result<std::vector<std::string>> ListTables(Db& db);
// The columns of `table` in their declared order.
[[nodiscard]] Result<std::vector<CopyColumn>> ListColumns(Db& db, const std::string& table);
// Rows of `table` (COUNT(*)).
[[nodiscard]] Result<int64_t> CountTableRows(Db& db, const std::string& table);
// The largest id of `table` (0 when empty).
[[nodiscard]] Result<int64_t> MaxTableId(Db& db, const std::string& table);

// Reads `table`'s rows that `where` keeps (?1 bound to `param` when given), ordered by the
// columns `order`, `page` rows at a time.
class RowReader {
 public:
  RowReader(Db& db, std::string table, std::vector<CopyColumn> columns, const std::string& order,
            std::string where, std::optional<std::string> param);
  // The next page into *rows (cleared first); false once every row was read.
  [[nodiscard]] Result<bool> Next(std::vector<CopyRow>* rows);

 private:
  std::string Sql(bool first) const;
  Db& db_;
  std::string table_;
  std::vector<CopyColumn> columns_;
  std::vector<size_t> order_;  // indexes of the key columns
  std::string where_;
  std::optional<std::string> param_;
  std::optional<CopyRow> last_;  // the last row read: the next page starts after its key
  bool done_ = false;
};

// Inserts rows of `columns` into `table`, many per statement.
class RowWriter {
 public:
  RowWriter(Db& db, std::string table, std::vector<CopyColumn> columns);
  [[nodiscard]] Status Add(CopyRow row);
  [[nodiscard]] Status Flush();
  int64_t written() const { return written_; }

 private:
  [[nodiscard]] Status Insert(size_t first, size_t count);
  Db& db_;
  std::string table_;
  std::vector<CopyColumn> columns_;
  size_t batch_;
  std::vector<CopyRow> pending_;
  int64_t written_ = 0;
};

// The id of the row of `table` whose columns `key` equal `values` (when `has_id`; else 1 for a
// row that is there), or nothing.
[[nodiscard]] Result<std::optional<int64_t>> FindRowByKey(Db& db, const std::string& table,
                                                          const std::vector<CopyColumn>& key,
                                                          const std::vector<CopyValue>& values,
                                                          bool has_id);

}  // namespace baton
