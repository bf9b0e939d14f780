#include "orchestrator/store/store_copy.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "orchestrator/store/sql_dialect.h"
#include "orchestrator/store/store.h"
#include "orchestrator/store/store_copy_plan.h"
#include "orchestrator/store/store_copy_rows.h"
#include "orchestrator/store/store_internal.h"
#include "orchestrator/store/store_spec.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

// The source's read transaction: one snapshot for every table, ended when it goes.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(Db& db) : db_(&db) {}
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;
  ~ReadSnapshot() {
    if (db_->InTransaction()) (void)db_->Exec("ROLLBACK");
  }

 private:
  Db* db_;
};

struct CopyContext {
  Db& src;
  Db& dst;
  const StoreCopyOptions& options;
  std::string src_shown;
  // Per table with ids: the source's id → the target's.
  std::map<std::string, std::unordered_map<int64_t, int64_t>> ids;
};

bool SameStore(const StoreSpec& a, const StoreSpec& b) {
  if (a.backend != b.backend) return false;
  if (a.backend == Backend::kPostgres) return a.target == b.target;
  std::error_code ea, eb;
  return fs::weakly_canonical(a.target, ea) == fs::weakly_canonical(b.target, eb);
}

// Every table of `db` has a plan entry and every entry a table: a migration that added a table
// stops the copy here rather than leaving the table behind.
Status CheckPlanCovers(Db& db, const std::string& shown) {
  BATON_ASSIGN_OR_RETURN(const std::vector<std::string> tables, ListTables(db));
  for (const std::string& t : tables) {
    if (FindCopyTable(t) == nullptr) {
      return Status::Internal(shown + ": table " + t + " has no entry in the copy plan");
    }
  }
  for (const CopyTable& t : CopyPlan()) {
    if (std::find(tables.begin(), tables.end(), t.name) == tables.end()) {
      return Status::Data(shown + ": table " + t.name + " is missing (not a whole baton store)");
    }
  }
  return Status::Ok();
}

// The source's reference in `v` as the target's id.
Status MapRef(CopyContext& ctx, const CopyTable& t, const CopyRef& ref, CopyValue& v) {
  if (v.null) return Status::Ok();
  if (ref.kind != RefKind::kForeignKey && v.i == 0) return Status::Ok();
  const bool negated = ref.kind == RefKind::kSigned && v.i < 0;
  const int64_t id = negated ? -v.i : v.i;
  const auto& map = ctx.ids[ref.parent];
  const auto it = map.find(id);
  if (it == map.end()) {
    return Status::Data(
        ctx.src_shown + ": a row of " + t.name + " names " + ref.parent + " " + std::to_string(id) +
        " (" + ref.column + "), which " +
        (ctx.options.owner.empty() ? "is not there" : "is not among " + ctx.options.owner + "'s") +
        "; `baton store check --store " + ctx.src_shown + "` lists such rows; nothing was copied");
  }
  v.i = negated ? -it->second : it->second;
  return Status::Ok();
}

size_t ColumnIndex(const std::vector<CopyColumn>& cols, const std::string& name) {
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i].name == name) return i;
  }
  return cols.size();
}

// --merge: what the target's row with this row's natural key makes of it. True when the row is
// left out (its id, for a reused row, mapped to the target's).
Result<bool> MatchInTarget(CopyContext& ctx, const CopyTable& t,
                           const std::vector<CopyColumn>& cols, const CopyRow& row,
                           TableCopyCount* count) {
  std::vector<CopyColumn> key;
  std::vector<CopyValue> values;
  for (const std::string& k : SplitColumns(t.match_key)) {
    const size_t i = ColumnIndex(cols, k);
    if (i == cols.size())
      return Status::Internal(std::string("store copy: ") + t.name + " has no " + k);
    key.push_back(cols[i]);
    values.push_back(row[i]);
  }
  BATON_ASSIGN_OR_RETURN(const std::optional<int64_t> found,
                         FindRowByKey(ctx.dst, t.name, key, values, t.has_id));
  if (!found) return false;
  const int64_t source_id = t.has_id ? row[ColumnIndex(cols, "id")].i : 0;
  switch (t.on_match) {
    case OnMatch::kRefuse:
      return Status::Data(std::string(t.name) + " " + std::to_string(source_id) + " of " +
                          ctx.src_shown + " (" + t.match_key + " " + values[0].s +
                          ") is already in the target as " + std::to_string(*found) +
                          ": --merge keeps runs apart and never writes one twice; nothing was "
                          "copied");
    case OnMatch::kReuse:
      ctx.ids[t.name][source_id] = *found;
      ++count->reused;
      return true;
    case OnMatch::kKeepTarget:
      ++count->kept_target;
      return true;
    case OnMatch::kNone:
      break;
  }
  return false;
}

Result<TableCopyCount> CopyTableRows(CopyContext& ctx, const CopyTable& t) {
  TableCopyCount count{t.name};
  const std::string& owner = ctx.options.owner;
  if (!owner.empty() && *t.owner_where == '\0') return count;  // not part of a user's history
  BATON_ASSIGN_OR_RETURN(const std::vector<CopyColumn> cols, ListColumns(ctx.src, t.name));
  const size_t id_col = ColumnIndex(cols, "id");
  std::vector<std::pair<size_t, const CopyRef*>> refs;
  for (const CopyRef& r : t.refs) refs.emplace_back(ColumnIndex(cols, r.column), &r);
  for (const auto& [i, r] : refs) {
    if (i == cols.size())
      return Status::Internal(std::string("store copy: ") + t.name + " has no " + r->column);
  }
  const bool merge = ctx.options.merge;
  int64_t next_id = 0;
  if (merge && t.has_id) {
    BATON_ASSIGN_OR_RETURN(const int64_t max_id, MaxTableId(ctx.dst, t.name));
    next_id = max_id + 1;
  }
  auto& ids = ctx.ids[t.name];
  RowReader reader(ctx.src, t.name, cols, t.order, owner.empty() ? "" : t.owner_where,
                   owner.empty() ? std::nullopt : std::optional<std::string>(owner));
  RowWriter writer(ctx.dst, t.name, cols);
  std::vector<CopyRow> page;
  while (true) {
    BATON_ASSIGN_OR_RETURN(const bool more, reader.Next(&page));
    if (!more) break;
    for (CopyRow& row : page) {
      if (merge && t.on_match != OnMatch::kNone) {
        BATON_ASSIGN_OR_RETURN(const bool left_out, MatchInTarget(ctx, t, cols, row, &count));
        if (left_out) continue;
      }
      if (t.has_id) {
        const int64_t old_id = row[id_col].i;
        const int64_t new_id = merge ? next_id++ : old_id;
        ids[old_id] = new_id;
        row[id_col].i = new_id;
      }
      for (const auto& [i, r] : refs) BATON_RETURN_IF_ERROR(MapRef(ctx, t, *r, row[i]));
      BATON_RETURN_IF_ERROR(writer.Add(std::move(row)));
    }
  }
  BATON_RETURN_IF_ERROR(writer.Flush());
  count.copied = writer.written();
  return count;
}

// The copy once both stores are open and the source checked.
Result<StoreCopyReport> CopyOpenStores(Db& src, Store& target, const StoreCopyOptions& o,
                                       StoreCopyReport report) {
  Db& dst = StoreInternal::Db(target);
  BATON_RETURN_IF_ERROR(CheckPlanCovers(dst, report.to));
  ReadSnapshot snapshot(src);
  BATON_RETURN_IF_ERROR(src.Exec(ReadSnapshotSql(src.backend())));
  BATON_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(dst));
  if (!o.merge) {
    for (const CopyTable& t : CopyPlan()) {
      BATON_ASSIGN_OR_RETURN(const int64_t n, CountTableRows(dst, t.name));
      if (n > 0) report.target_rows.emplace_back(t.name, n);
    }
    if (report.refused()) return report;  // the transaction rolls back: nothing written
  }
  CopyContext ctx{src, dst, o, report.from, {}};
  for (const CopyTable& t : CopyPlan()) {
    BATON_ASSIGN_OR_RETURN(TableCopyCount c, CopyTableRows(ctx, t));
    report.tables.push_back(std::move(c));
  }
  // Rows went in with their ids given: new rows of the target's own processes start past them.
  if (dst.backend() == Backend::kPostgres) BATON_RETURN_IF_ERROR(PgResetIdentitySequences(dst));
  BATON_RETURN_IF_ERROR(tx.Commit());
  return report;
}

Result<StoreCopyReport> CopyChecked(const StoreSpec& from, const StoreCopyOptions& o,
                                    StoreCopyReport report) {
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<Db> src, OpenDb(from, kBusyTimeoutMs));
  BATON_ASSIGN_OR_RETURN(const int64_t version, ReadSchemaVersion(*src));
  const int64_t latest = Store::LatestSchemaVersion();
  if (version != latest) {
    return Status::Data(
        "source " + report.from + " is at schema version " + std::to_string(version) +
        ", the target at " + std::to_string(latest) + " (this baton's): " +
        (version < latest ? "open the source once with this baton (`baton ls --store SOURCE` "
                            "migrates it), then copy"
                          : "copy with a baton of schema version " + std::to_string(version)));
  }
  report.schema_version = version;
  BATON_RETURN_IF_ERROR(CheckPlanCovers(*src, report.from));
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<Store> target, Store::Open(o.to));
  return CopyOpenStores(*src, *target, o, std::move(report));
}

}  // namespace

int64_t StoreCopyReport::copied(const std::string& table) const {
  for (const TableCopyCount& t : tables) {
    if (t.table == table) return t.copied;
  }
  return 0;
}

Result<StoreCopyReport> CopyStore(const StoreCopyOptions& o) {
  BATON_ASSIGN_OR_RETURN(const StoreSpec from, ParseStoreSpec(o.from));
  BATON_ASSIGN_OR_RETURN(const StoreSpec to, ParseStoreSpec(o.to));
  StoreCopyReport report;
  report.from = ScrubPassword(o.from);
  report.to = ScrubPassword(o.to);
  if (SameStore(from, to)) {
    return Status::InvalidArgument("--from and --to name the same store (" + report.from + ")");
  }
  std::error_code ec;
  if (from.backend == Backend::kSqlite && !fs::is_regular_file(from.target, ec)) {
    return Status::Io(from.target + ": no store there (a baton database file)");
  }
  // A SQLite target this copy creates goes again when the copy fails: "as it was" is no file.
  const bool creates = to.backend == Backend::kSqlite && !fs::exists(to.target, ec);
  Result<StoreCopyReport> out = CopyChecked(from, o, std::move(report));
  if (!out.ok() && creates) {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(to.target + suffix, ec);
  }
  return out;
}

}  // namespace baton
