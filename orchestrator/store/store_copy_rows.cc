#include "orchestrator/store/store_copy_rows.h"

#include <algorithm>
#include <cctype>

#include "orchestrator/store/sql_dialect.h"
#include "orchestrator/store/store_copy_plan.h"

namespace baton {

namespace {

// Rows per page read: bounds what PostgreSQL's whole-result fetch holds at once.
constexpr int64_t kPageRows = 5000;
// Bound values per INSERT, well under SQLite's 32766 and PostgreSQL's 65535.
constexpr size_t kValuesPerInsert = 16000;
constexpr size_t kMaxRowsPerInsert = 256;

std::string Quoted(const std::string& name) { return "\"" + name + "\""; }

// SQLite's declared type or PostgreSQL's data_type, as the kind of value the column holds.
ColumnKind KindOf(std::string type) {
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (type.find("INT") != std::string::npos) return ColumnKind::kInt;
  if (type.find("REAL") != std::string::npos || type.find("DOUB") != std::string::npos ||
      type.find("FLOA") != std::string::npos) {
    return ColumnKind::kReal;
  }
  if (type.find("BLOB") != std::string::npos || type.find("BYTEA") != std::string::npos) {
    return ColumnKind::kBlob;
  }
  return ColumnKind::kText;
}

CopyValue ReadValue(const Statement& s, int col, ColumnKind kind) {
  CopyValue v;
  if (s.IsNull(col)) return v;
  v.null = false;
  switch (kind) {
    case ColumnKind::kInt:
      v.i = s.Int(col);
      break;
    case ColumnKind::kReal:
      v.d = s.Double(col);
      break;
    case ColumnKind::kText:
      v.s = s.Text(col);
      break;
    case ColumnKind::kBlob: {
      const void* data = s.BlobData(col);
      const size_t size = s.BlobSize(col);
      if (data != nullptr && size > 0) v.s.assign(static_cast<const char*>(data), size);
      break;
    }
  }
  return v;
}

void BindValue(Statement& s, int i, const CopyValue& v, ColumnKind kind) {
  if (v.null) {
    s.BindNull(i);
    return;
  }
  switch (kind) {
    case ColumnKind::kInt:
      s.Bind(i, v.i);
      break;
    case ColumnKind::kReal:
      s.Bind(i, v.d);
      break;
    case ColumnKind::kText:
      s.Bind(i, v.s);
      break;
    case ColumnKind::kBlob:
      s.BindBlob(i, v.s);
      break;
  }
}

Result<int64_t> OneInt(Db& db, const std::string& sql) {
  BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare(sql));
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const int64_t n = row ? s->Int(0) : 0;
  s->Reset();
  return n;
}

}  // namespace

Result<std::vector<std::string>> ListTables(Db& db) {
  BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare(ListTablesSql(db.backend())));
  return s->Collect<std::string>([](Statement& r) { return r.Text(0); });
}

Result<std::vector<CopyColumn>> ListColumns(Db& db, const std::string& table) {
  BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare(ListColumnsSql(db.backend())));
  s->Bind(1, table);
  return s->Collect<CopyColumn>([](Statement& r) {
    return CopyColumn{r.Text(0), KindOf(r.Text(1))};
  });
}

Result<int64_t> CountTableRows(Db& db, const std::string& table) {
  return OneInt(db, "SELECT COUNT(*) FROM " + Quoted(table));
}

Result<int64_t> MaxTableId(Db& db, const std::string& table) {
  return OneInt(db, "SELECT COALESCE(MAX(id), 0) FROM " + Quoted(table));
}

// ------------------------------------------------------------------------------ reader

RowReader::RowReader(Db& db, std::string table, std::vector<CopyColumn> columns,
                     const std::string& order, std::string where, std::optional<std::string> param)
    : db_(db),
      table_(std::move(table)),
      columns_(std::move(columns)),
      where_(std::move(where)),
      param_(std::move(param)) {
  for (const std::string& key : SplitColumns(order)) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i].name == key) order_.push_back(i);
    }
  }
}

std::string RowReader::Sql(bool first) const {
  std::string cols, keys, after, places;
  for (size_t i = 0; i < columns_.size(); ++i) cols += (i ? ", " : "") + Quoted(columns_[i].name);
  for (size_t k = 0; k < order_.size(); ++k) {
    keys += (k ? ", " : "") + Quoted(columns_[order_[k]].name);
    places += (k ? ", " : "") + std::string("?") + std::to_string(k + 2);
  }
  std::string sql = "SELECT " + cols + " FROM " + Quoted(table_);
  std::vector<std::string> conds;
  if (!where_.empty()) conds.push_back("(" + where_ + ")");
  if (!first) {
    conds.push_back(order_.size() == 1 ? keys + " > " + places
                                       : "(" + keys + ") > (" + places + ")");
  }
  for (size_t i = 0; i < conds.size(); ++i) sql += (i ? " AND " : " WHERE ") + conds[i];
  return sql + " ORDER BY " + keys + " LIMIT " + std::to_string(kPageRows);
}

Result<bool> RowReader::Next(std::vector<CopyRow>* rows) {
  rows->clear();
  if (done_) return false;
  if (order_.empty()) return Status::Internal("store copy: " + table_ + " has no key columns");
  BATON_ASSIGN_OR_RETURN(Statement * s, db_.Prepare(Sql(!last_.has_value())));
  if (param_) s->Bind(1, *param_);
  if (last_) {
    for (size_t k = 0; k < order_.size(); ++k) {
      BindValue(*s, static_cast<int>(k + 2), (*last_)[order_[k]], columns_[order_[k]].kind);
    }
  }
  while (true) {
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (!row) break;
    CopyRow r;
    r.reserve(columns_.size());
    for (size_t i = 0; i < columns_.size(); ++i) {
      r.push_back(ReadValue(*s, static_cast<int>(i), columns_[i].kind));
    }
    rows->push_back(std::move(r));
  }
  s->Reset();
  if (static_cast<int64_t>(rows->size()) < kPageRows) done_ = true;
  if (!rows->empty()) last_ = rows->back();
  return !rows->empty();
}

// ------------------------------------------------------------------------------ writer

RowWriter::RowWriter(Db& db, std::string table, std::vector<CopyColumn> columns)
    : db_(db), table_(std::move(table)), columns_(std::move(columns)) {
  batch_ = std::max<size_t>(
      1, std::min(kMaxRowsPerInsert, kValuesPerInsert / std::max<size_t>(1, columns_.size())));
}

Status RowWriter::Add(CopyRow row) {
  pending_.push_back(std::move(row));
  if (pending_.size() < batch_) return Status::Ok();
  return Flush();
}

Status RowWriter::Flush() {
  // Full batches share one statement; the rest go one row each, so only two texts are cached.
  size_t at = 0;
  while (pending_.size() - at >= batch_) {
    BATON_RETURN_IF_ERROR(Insert(at, batch_));
    at += batch_;
  }
  for (; at < pending_.size(); ++at) BATON_RETURN_IF_ERROR(Insert(at, 1));
  pending_.clear();
  return Status::Ok();
}

Status RowWriter::Insert(size_t first, size_t count) {
  std::string cols, values;
  for (size_t i = 0; i < columns_.size(); ++i) cols += (i ? ", " : "") + Quoted(columns_[i].name);
  size_t n = 0;
  for (size_t r = 0; r < count; ++r) {
    values += r ? ", (" : "(";
    for (size_t i = 0; i < columns_.size(); ++i) {
      values += (i ? ", ?" : "?") + std::to_string(++n);
    }
    values += ")";
  }
  const std::string sql = "INSERT INTO " + Quoted(table_) + " (" + cols + ") VALUES " + values;
  BATON_ASSIGN_OR_RETURN(Statement * s, db_.Prepare(sql));
  int p = 0;
  for (size_t r = first; r < first + count; ++r) {
    for (size_t i = 0; i < columns_.size(); ++i)
      BindValue(*s, ++p, pending_[r][i], columns_[i].kind);
  }
  Status st = s->Run();
  s->Reset();
  if (!st.ok()) return st.Annotate("store copy: writing " + table_);
  written_ += static_cast<int64_t>(count);
  return Status::Ok();
}

Result<std::optional<int64_t>> FindRowByKey(Db& db, const std::string& table,
                                            const std::vector<CopyColumn>& key,
                                            const std::vector<CopyValue>& values, bool has_id) {
  std::string sql = std::string("SELECT ") + (has_id ? "id" : "1") + " FROM " + Quoted(table);
  for (size_t k = 0; k < key.size(); ++k) {
    sql += (k ? " AND " : " WHERE ") + Quoted(key[k].name) + " = ?" + std::to_string(k + 1);
  }
  BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare(sql));
  for (size_t k = 0; k < key.size(); ++k)
    BindValue(*s, static_cast<int>(k + 1), values[k], key[k].kind);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  std::optional<int64_t> out;
  if (row) out = s->Int(0);
  s->Reset();
  return out;
}

}  // namespace baton
