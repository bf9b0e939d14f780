#include "orchestrator/store/store_check.h"

#include <filesystem>
#include <map>

#include "orchestrator/store/shared_fs.h"
#include "orchestrator/store/store.h"
#include "orchestrator/store/store_spec.h"

namespace baton {

namespace {

// Passes of delete-and-check a repair makes before it gives up: one is enough for the schema's
// references (parents first); a second catches a child whose parent the first pass deleted.
constexpr int kRepairPasses = 4;

// The rows of `r.table` whose `r.column` names no row of `r.parent`.
std::string DanglingWhere(const SchemaReference& r) {
  return std::string(" WHERE ") + r.column + " IS NOT NULL AND " + r.column +
         " NOT IN (SELECT id FROM " + r.parent + ")";
}

// True when `st` says the table is not in this database (an older schema version).
bool NoSuchTable(const Status& st) {
  return st.message().find("no such table") != std::string::npos ||  // SQLite
         st.message().find("does not exist") != std::string::npos;   // PostgreSQL
}

// Splits "attempt_id, step" into its column names.
std::vector<std::string> KeyColumns(const char* key) {
  std::vector<std::string> out;
  std::string k = key;
  size_t start = 0;
  while (start <= k.size()) {
    size_t comma = k.find(',', start);
    if (comma == std::string::npos) comma = k.size();
    std::string col = k.substr(start, comma - start);
    while (!col.empty() && col.front() == ' ') col.erase(0, 1);
    if (!col.empty()) out.push_back(col);
    start = comma + 1;
  }
  return out;
}

Result<int64_t> CountRows(Db& db, const std::string& table) {
  BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare("SELECT COUNT(*) FROM " + table));
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const int64_t n = row ? s->Int(0) : 0;
  s->Reset();
  return n;
}

// One reference's dangling rows: counted, the first ones named. Nothing when the table is not
// in this database's version.
Result<std::optional<DanglingReference>> FindOne(Db& db, const SchemaReference& r) {
  Result<Statement*> count =
      db.Prepare(std::string("SELECT COUNT(*) FROM ") + r.table + DanglingWhere(r));
  if (!count.ok() && NoSuchTable(count.status())) return std::optional<DanglingReference>();
  BATON_RETURN_IF_ERROR(count.status());
  BATON_ASSIGN_OR_RETURN(const bool counted, (*count)->Step());
  DanglingReference d{r.table, r.column, r.parent, counted ? (*count)->Int(0) : 0, {}, r.nullable};
  (*count)->Reset();
  if (d.count == 0) return std::optional<DanglingReference>();
  const std::vector<std::string> key = KeyColumns(r.key);
  std::string cols;
  for (const std::string& c : key) cols += c + ", ";
  BATON_ASSIGN_OR_RETURN(Statement * list,
                         db.Prepare("SELECT " + cols + r.column + " FROM " + r.table +
                                    DanglingWhere(r) + " ORDER BY " + r.key + " LIMIT ?1"));
  list->Bind(1, kListedDanglingRows);
  while (true) {
    BATON_ASSIGN_OR_RETURN(const bool row, list->Step());
    if (!row) break;
    std::string name;
    for (size_t i = 0; i < key.size(); ++i) {
      name += (i ? ", " : "") + key[i] + " " + list->Text(static_cast<int>(i));
    }
    d.rows.emplace_back(name, list->Int(static_cast<int>(key.size())));
  }
  return std::optional<DanglingReference>(std::move(d));
}

// Deletes (or, for a nullable reference, clears) every dangling row of `r`.
Status RepairOne(Db& db, const SchemaReference& r) {
  const std::string sql = r.nullable ? std::string("UPDATE ") + r.table + " SET " + r.column +
                                           " = NULL" + DanglingWhere(r)
                                     : std::string("DELETE FROM ") + r.table + DanglingWhere(r);
  Result<Statement*> s = db.Prepare(sql);
  if (!s.ok() && NoSuchTable(s.status())) return Status::Ok();
  BATON_RETURN_IF_ERROR(s.status());
  return (*s)->Run();
}

// Row counts of every table a reference names that this database has.
Result<std::map<std::string, int64_t>> CountTables(Db& db) {
  std::map<std::string, int64_t> out;
  for (const SchemaReference& r : SchemaReferences()) {
    if (out.count(r.table)) continue;
    Result<int64_t> n = CountRows(db, r.table);
    if (!n.ok() && NoSuchTable(n.status())) continue;
    BATON_RETURN_IF_ERROR(n.status());
    out[r.table] = *n;
  }
  return out;
}

}  // namespace

const std::vector<SchemaReference>& SchemaReferences() {
  static const std::vector<SchemaReference> refs = {
      {"attempts", "run_id", "runs", "id", false},
      {"steps", "run_id", "runs", "attempt_id, step", false},
      {"steps", "attempt_id", "attempts", "attempt_id, step", false},
      {"microsteps", "run_id", "runs", "attempt_id, step, micro", false},
      {"microsteps", "attempt_id", "attempts", "attempt_id, step, micro", false},
      {"checkpoints", "run_id", "runs", "run_id, step", false},
      {"checkpoints", "attempt_id", "attempts", "run_id, step", true},
      {"ingest_cursors", "run_id", "runs", "path", false},
      {"time_buckets", "run_id", "runs", "run_id, attempt_id", false},
      {"stop_save_budgets", "run_id", "runs", "run_id", false},
      {"run_actions", "run_id", "runs", "id", false},
      {"incidents", "run_id", "runs", "id", false},
      {"alert_deliveries", "incident_id", "incidents", "id", false},
      {"sweep_members", "run_id", "runs", "sweep_id, member_index", false},
      {"sweep_members", "sweep_id", "sweeps", "sweep_id, member_index", false},
      {"eval_jobs", "run_id", "runs", "id", false},
      {"node_incidents", "run_id", "runs", "id", false},
      {"node_incidents", "node_id", "nodes", "id", false},
      {"node_actions", "node_id", "nodes", "id", false},
      {"evals", "run_id", "runs", "run_id, step", false},
  };
  return refs;
}

int64_t StoreCheckReport::dangling_rows() const {
  int64_t n = 0;
  for (const DanglingReference& d : dangling) n += d.count;
  return n;
}

Result<std::vector<DanglingReference>> FindDanglingRows(Db& db) {
  std::vector<DanglingReference> out;
  for (const SchemaReference& r : SchemaReferences()) {
    BATON_ASSIGN_OR_RETURN(std::optional<DanglingReference> d, FindOne(db, r));
    if (d) out.push_back(std::move(*d));
  }
  return out;
}

std::string DanglingRowsText(const std::vector<DanglingReference>& dangling, size_t max) {
  std::string out;
  size_t shown = 0;
  int64_t total = 0;
  for (const DanglingReference& d : dangling) {
    total += d.count;
    for (const auto& [key, missing] : d.rows) {
      if (shown == max) break;
      out += (shown++ ? "; " : "") + d.table + " (" + key + "): " + d.column + " " +
             std::to_string(missing) + " names no row of " + d.parent;
    }
  }
  if (total > static_cast<int64_t>(shown)) {
    out += "; " + std::to_string(total - static_cast<int64_t>(shown)) + " more";
  }
  return out;
}

Result<StoreCheckReport> CheckStoreFile(const std::string& path, bool repair) {
  BATON_ASSIGN_OR_RETURN(const StoreSpec spec, ParseStoreSpec(path));
  std::error_code ec;
  if (spec.backend == Backend::kSqlite && !std::filesystem::is_regular_file(spec.target, ec)) {
    return Status::Io(spec.target + ": no store there (a baton database file)");
  }
  if (spec.backend == Backend::kSqlite) {
    BATON_RETURN_IF_ERROR(CheckSqliteStoreFilesystem(spec.target));
  }
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb(spec, kBusyTimeoutMs));
  StoreCheckReport report;
  if (!repair) {
    BATON_ASSIGN_OR_RETURN(report.dangling, FindDanglingRows(*db));
    return report;
  }
  // One transaction: the rows found, deleted and checked again all under the write lock.
  BATON_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db));
  BATON_ASSIGN_OR_RETURN(report.dangling, FindDanglingRows(*db));
  if (report.dangling.empty()) return report;  // nothing to do: rolls back an empty transaction
  BATON_ASSIGN_OR_RETURN(const auto before, CountTables(*db));
  for (int pass = 0; pass < kRepairPasses; ++pass) {
    for (const SchemaReference& r : SchemaReferences()) BATON_RETURN_IF_ERROR(RepairOne(*db, r));
    BATON_ASSIGN_OR_RETURN(const std::vector<DanglingReference> left, FindDanglingRows(*db));
    if (left.empty()) {
      BATON_ASSIGN_OR_RETURN(const auto after, CountTables(*db));
      for (const auto& [table, n] : before) {
        const auto it = after.find(table);
        const int64_t gone = n - (it == after.end() ? 0 : it->second);
        if (gone > 0) report.removed.emplace_back(table, gone);
      }
      BATON_RETURN_IF_ERROR(tx.Commit());
      report.repaired = true;
      return report;
    }
  }
  return Status::Internal(
      db->path() + ": rows still dangle after " + std::to_string(kRepairPasses) +
      " repair passes (nothing changed): " + DanglingRowsText(report.dangling, 5));
}

}  // namespace baton
