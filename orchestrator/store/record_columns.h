// Each record's SQL columns, described once: one table per record (its columns in order, each a
// name and the record field it holds), from which the store generates the SELECT list, the row
// reader, the INSERT and UPDATE statements and their binds. Adding a column is a migration
// (schema/sql/) plus one line in its record's table (record_columns.cc).
//
// Part of the store: only orchestrator/store/ includes this. The generated statements are
// prepared statements like every other (SqliteDb::Prepare); values are always bound, and the SQL
// text is made only of the names below. Tables are immutable after construction; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "orchestrator/store/db.h"
#include "orchestrator/store/records.h"
#include "orchestrator/store/series_values.h"

namespace baton {

// How one column's value moves between a statement and a record field, by the field's type.
// Doubles: NaN is SQL NULL both ways (records.h). Bools are 0/1. Text never reads as NULL ('').
inline void ReadColumn(const Statement& s, int col, int64_t* v) { *v = s.Int(col); }
inline void ReadColumn(const Statement& s, int col, double* v) { *v = s.Double(col); }
inline void ReadColumn(const Statement& s, int col, bool* v) { *v = s.Int(col) != 0; }
inline void ReadColumn(const Statement& s, int col, std::string* v) { *v = s.Text(col); }
inline void ReadColumn(const Statement& s, int col, std::optional<int64_t>* v) {
  *v = s.OptInt(col);
}
inline void ReadColumn(const Statement& s, int col, std::optional<double>* v) {
  *v = s.OptDouble(col);
}
// Nullable text (attempts.restart_cause, hang_*): NULL reads as none.
inline void ReadColumn(const Statement& s, int col, std::optional<std::string>* v) {
  *v = s.IsNull(col) ? std::nullopt : std::optional<std::string>(s.Text(col));
}
// A closed vocabulary's word (attempts.trainer_signal): '' is none, and so is a word this binary
// does not know; none is written as ''.
template <class E, class = decltype(Vocabulary<E>::kWords)>
void ReadColumn(const Statement& s, int col, std::optional<E>* v) {
  *v = Find<E>(s.Text(col));
}
// A status the binary does not know reads as FAILED (a newer baton wrote it; show it as over).
void ReadColumn(const Statement& s, int col, RunStatus* v);
// A JSON array of strings (steps.nonfinite_episodes); anything else reads as no ids.
void ReadColumn(const Statement& s, int col, std::vector<std::string>* v);

inline void BindColumn(Statement& s, int param, int64_t v) { s.Bind(param, v); }
inline void BindColumn(Statement& s, int param, double v) { s.Bind(param, v); }
inline void BindColumn(Statement& s, int param, bool v) { s.Bind(param, int64_t{v ? 1 : 0}); }
inline void BindColumn(Statement& s, int param, const std::string& v) { s.Bind(param, v); }
inline void BindColumn(Statement& s, int param, const std::optional<int64_t>& v) {
  s.Bind(param, v);
}
inline void BindColumn(Statement& s, int param, const std::optional<double>& v) {
  s.Bind(param, v);
}
inline void BindColumn(Statement& s, int param, const std::optional<std::string>& v) {
  if (v) {
    s.Bind(param, *v);
  } else {
    s.BindNull(param);
  }
}
template <class E, class = decltype(Vocabulary<E>::kWords)>
void BindColumn(Statement& s, int param, const std::optional<E>& v) {
  s.Bind(param, std::string(v ? Name(*v) : ""));
}
void BindColumn(Statement& s, int param, RunStatus v);
// NULL for no ids (the partial index and the docs rely on NULL for applied steps).
void BindColumn(Statement& s, int param, const std::vector<std::string>& v);

// " ON CONFLICT (<keys>) DO UPDATE SET c = excluded.c, ..." for every column of `columns` (both
// comma-separated) that is not a key: the portable upsert, replacing a row whole as SQLite's
// INSERT OR REPLACE did, on both backends.
std::string OnConflictReplace(const std::string& keys, const std::string& columns);

enum class ColumnRole {
  kValue,  // read, inserted and updated
  kKey,    // read and inserted; identifies the row, so an update never changes it
  kRowId,  // INTEGER PRIMARY KEY: read, assigned by SQLite on insert, the WHERE of an update
};

template <class R>
struct Column {
  std::string name;
  ColumnRole role = ColumnRole::kValue;
  std::function<void(const Statement&, int col, R*)> read;
  std::function<void(Statement&, int param, const R&)> bind;
};

// The column `name` holding `field` of R.
template <class R, class T>
Column<R> Col(std::string name, T R::*field, ColumnRole role = ColumnRole::kValue) {
  return Column<R>{
      std::move(name), role,
      [field](const Statement& s, int col, R* r) { ReadColumn(s, col, &(r->*field)); },
      [field](Statement& s, int param, const R& r) { BindColumn(s, param, r.*field); }};
}

// A statement generated from a table and the columns it binds (positions in the table).
struct TableStatement {
  std::string sql;
  std::vector<size_t> bound;
};

template <class R>
class ColumnTable {
 public:
  ColumnTable(std::string table, std::vector<Column<R>> columns)
      : table_(std::move(table)), columns_(std::move(columns)) {}

  const std::string& name() const { return table_; }
  // Columns, which is also the largest parameter number Insert() and Update() use.
  size_t size() const { return columns_.size(); }

  // "a, b, c": the columns in table order, each after `prefix` ("r."), without `except`.
  std::string SelectList(const std::string& prefix = "", const std::string& except = "") const {
    std::string out;
    for (const Column<R>& c : columns_) {
      if (c.name == except) continue;
      out += (out.empty() ? "" : ", ") + prefix + c.name;
    }
    return out;
  }

  // Reads the result columns SelectList(.., except) from `first` on into *r; returns the index of
  // the result column after them.
  int ReadInto(const Statement& s, R* r, int first = 0, const std::string& except = "") const {
    int col = first;
    for (const Column<R>& c : columns_) {
      if (c.name != except) c.read(s, col++, r);
    }
    return col;
  }
  R Read(const Statement& s) const {
    R r;
    ReadInto(s, &r);
    return r;
  }
  // Every row a statement of Select() yields.
  [[nodiscard]] Result<std::vector<R>> ReadAll(Statement& s) const {
    return s.Collect<R>([this](const Statement& row) { return Read(row); });
  }

  // "SELECT <SelectList()> FROM <table> <rest>", `rest` being the WHERE/ORDER BY/LIMIT part.
  std::string Select(const std::string& rest) const {
    return "SELECT " + SelectList() + " FROM " + table_ + " " + rest;
  }

  // "?N": the parameter Insert() and Update() give column `name` (its 1-based position), for SQL
  // a caller writes around them. Empty for a name the table does not have.
  std::string Param(const std::string& name) const {
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i].name == name) return "?" + std::to_string(i + 1);
    }
    return "";
  }

  // "<verb> INTO <table> (<columns>) VALUES (?1, ...)" over every column but the row id.
  // `computed` maps a column the store fills itself to the SQL that computes it (no bind).
  TableStatement Insert(const std::string& verb,
                        const std::map<std::string, std::string>& computed = {}) const {
    TableStatement st;
    std::string names, values;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const Column<R>& c = columns_[i];
      if (c.role == ColumnRole::kRowId) continue;
      const auto sql = computed.find(c.name);
      names += (names.empty() ? "" : ", ") + c.name;
      values += (values.empty() ? "" : ", ") +
                (sql != computed.end() ? sql->second : "?" + std::to_string(i + 1));
      if (sql == computed.end()) st.bound.push_back(i);
    }
    st.sql = verb + " INTO " + table_ + " (" + names + ") VALUES (" + values + ")";
    return st;
  }

  // Insert() that replaces the row whose `keys` (comma-separated) it repeats.
  TableStatement Upsert(const std::string& keys,
                        const std::map<std::string, std::string>& computed = {}) const {
    TableStatement st = Insert("INSERT", computed);
    const size_t open = st.sql.find(" (") + 2;
    st.sql += OnConflictReplace(keys, st.sql.substr(open, st.sql.find(')') - open));
    return st;
  }

  // "UPDATE <table> SET <column> = ?N, ... WHERE <row id> = ?K": every value column, by row id.
  TableStatement Update() const {
    TableStatement st;
    std::string sets, where;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const Column<R>& c = columns_[i];
      const std::string param = "?" + std::to_string(i + 1);
      if (c.role == ColumnRole::kKey) continue;
      if (c.role == ColumnRole::kRowId) {
        where = c.name + " = " + param;
      } else {
        sets += (sets.empty() ? "" : ", ") + c.name + " = " + param;
      }
      st.bound.push_back(i);
    }
    st.sql = "UPDATE " + table_ + " SET " + sets + " WHERE " + where;
    return st;
  }

  // Binds the parameters of `st` (one of this table's statements) to the fields of `r`; with
  // `offset`, parameter N of `st` is bound as N + offset (a later row of a multi-row INSERT).
  void Bind(Statement& s, const TableStatement& st, const R& r, int offset = 0) const {
    for (size_t i : st.bound) columns_[i].bind(s, static_cast<int>(i + 1) + offset, r);
  }
  // Runs `st` (Insert() or Update()) for `r`.
  [[nodiscard]] Status Write(Db& db, const TableStatement& st, const R& r) const {
    BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare(st.sql));
    Bind(*s, st, r);
    return s->Run();
  }

 private:
  std::string table_;
  std::vector<Column<R>> columns_;
};

// The tables, in the column order of schema/sql/ (docs/store.md).
const ColumnTable<RunRecord>& RunTable();
const ColumnTable<AttemptRecord>& AttemptTable();
const ColumnTable<StepRecord>& StepTable();
const ColumnTable<MicrostepRecord>& MicrostepTable();
const ColumnTable<CheckpointRecord>& CheckpointTable();
const ColumnTable<StopSaveBudgetRecord>& StopSaveBudgetTable();
const ColumnTable<WriteProbeRecord>& WriteProbeTable();
// A read-only view of `steps`: the columns a chart series needs (series_values.h), for the row
// path, the rollups and the run-history reads alike.
const ColumnTable<SeriesRow>& SeriesRowTable();

}  // namespace baton
