#include "orchestrator/store/series_rollups.h"

#include <algorithm>
#include <string>
#include <vector>

#include "orchestrator/store/record_columns.h"

namespace baton {

namespace {

// Every row of the run with step in [first, last], in step order.
Result<std::vector<SeriesRow>> RunRows(Db& db, int64_t run_id, int64_t first, int64_t last) {
  static const std::string kSql = SeriesRowTable().Select(
      "WHERE run_id = ?1 AND step BETWEEN ?2 AND ?3 ORDER BY step, attempt_id");
  BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare(kSql));
  s->Bind(1, run_id).Bind(2, first).Bind(3, last);
  return SeriesRowTable().ReadAll(*s);
}

// Replaces the nodes of (run, level, block) with `nodes` (attempt id -> node).
Status WriteBlock(Db& db, int64_t run_id, int level, int64_t block,
                  const std::map<int64_t, RollupNode>& nodes) {
  BATON_ASSIGN_OR_RETURN(
      Statement * del,
      db.Prepare("DELETE FROM step_rollups WHERE run_id = ?1 AND level = ?2 AND block = ?3"));
  BATON_RETURN_IF_ERROR(del->Bind(1, run_id).Bind(2, level).Bind(3, block).Run());
  for (const auto& [attempt_id, node] : nodes) {
    BATON_ASSIGN_OR_RETURN(Statement * ins,
                           db.Prepare("INSERT INTO step_rollups (run_id, level, block, "
                                      "attempt_id, data) VALUES (?1, ?2, ?3, ?4, ?5)"));
    BATON_RETURN_IF_ERROR(ins->Bind(1, run_id)
                              .Bind(2, level)
                              .Bind(3, block)
                              .Bind(4, attempt_id)
                              .BindBlob(5, EncodeNode(node))
                              .Run());
  }
  return Status::Ok();
}

// "INSERT INTO step_rollups ... VALUES" of 1, 2, 4 ... 64 rows (only these sizes, so a connection
// caches at most seven texts).
constexpr size_t kMaxNodeRowsLog2 = 6;
const std::string& InsertNodesSql(size_t rows_log2) {
  static const std::vector<std::string> kTexts = [] {
    std::vector<std::string> texts;
    for (size_t n = 1; n <= (size_t{1} << kMaxNodeRowsLog2); n *= 2) {
      std::string sql = "INSERT INTO step_rollups (run_id, level, block, attempt_id, data) VALUES ";
      for (size_t k = 0; k < n; ++k) {
        const size_t p = 5 * k;
        sql += (k > 0 ? ", (?" : "(?") + std::to_string(p + 1) + ", ?" + std::to_string(p + 2) +
               ", ?" + std::to_string(p + 3) + ", ?" + std::to_string(p + 4) + ", ?" +
               std::to_string(p + 5) + ")";
      }
      texts.push_back(sql);
    }
    return texts;
  }();
  return kTexts[rows_log2];
}

struct LeafNode {
  int64_t block = 0;
  int64_t attempt_id = 0;
  RollupNode node;
};

// Replaces every level-0 node of blocks [first, last] with `nodes`: one DELETE and a few
// multi-row INSERTs, not two statements a block (a round trip each on PostgreSQL).
Status WriteLeaves(Db& db, int64_t run_id, int64_t first, int64_t last,
                   const std::vector<LeafNode>& nodes) {
  BATON_ASSIGN_OR_RETURN(Statement * del,
                         db.Prepare("DELETE FROM step_rollups WHERE run_id = ?1 AND level = 0 AND "
                                    "block BETWEEN ?2 AND ?3"));
  BATON_RETURN_IF_ERROR(del->Bind(1, run_id).Bind(2, first).Bind(3, last).Run());
  for (size_t at = 0; at < nodes.size();) {
    size_t log2 = kMaxNodeRowsLog2;
    while ((size_t{1} << log2) > nodes.size() - at) --log2;
    BATON_ASSIGN_OR_RETURN(Statement * ins, db.Prepare(InsertNodesSql(log2)));
    for (size_t k = 0; k < (size_t{1} << log2); ++k) {
      const LeafNode& n = nodes[at + k];
      const int p = static_cast<int>(5 * k);
      ins->Bind(p + 1, run_id)
          .Bind(p + 2, int64_t{0})
          .Bind(p + 3, n.block)
          .Bind(p + 4, n.attempt_id)
          .BindBlob(p + 5, EncodeNode(n.node));
    }
    BATON_RETURN_IF_ERROR(ins->Run());
    at += size_t{1} << log2;
  }
  return Status::Ok();
}

// Level-0 nodes of the given blocks, from the rows (rows in step order: each attempt's nodes
// are built in step order too).
Status RecomputeLeaves(Db& db, int64_t run_id, const std::set<int64_t>& blocks) {
  // Neighbouring dirty blocks are read with one query (a chunk of ingest dirties a long run of
  // consecutive blocks).
  auto it = blocks.begin();
  while (it != blocks.end()) {
    const int64_t first = *it;
    int64_t last = first;
    auto next = std::next(it);
    while (next != blocks.end() && *next == last + 1 && last - first < 255) {
      last = *next;
      ++next;
    }
    BATON_ASSIGN_OR_RETURN(
        const std::vector<SeriesRow> rows,
        RunRows(db, run_id, RollupBlockFirstStep(first, 0), RollupBlockFirstStep(last + 1, 0) - 1));
    size_t i = 0;
    std::vector<LeafNode> leaves;
    for (int64_t b = first; b <= last; ++b) {
      std::map<int64_t, RollupNode> nodes;
      const int64_t end = RollupBlockFirstStep(b + 1, 0);
      for (; i < rows.size() && rows[i].step < end; ++i) {
        AppendNode(&nodes[RollupNodeOwner(rows[i].attempt_id, rows[i].superseded)],
                   NodeOfRow(rows[i]));
      }
      for (const auto& [owner, node] : nodes) leaves.push_back(LeafNode{b, owner, node});
    }
    BATON_RETURN_IF_ERROR(WriteLeaves(db, run_id, first, last, leaves));
    it = next;
  }
  return Status::Ok();
}

// Nodes of `level` for the given blocks, merged from their children (level - 1).
Status RecomputeParents(Db& db, int64_t run_id, int level, const std::set<int64_t>& blocks) {
  for (int64_t p : blocks) {
    const int64_t first_child = p << kRollupFanoutBits;
    const int64_t last_child = first_child + (int64_t(1) << kRollupFanoutBits) - 1;
    BATON_ASSIGN_OR_RETURN(const std::vector<StoredRollupNode> children,
                           ReadRollupNodes(db, run_id, level - 1, first_child, last_child));
    std::map<int64_t, RollupNode> nodes;
    for (const StoredRollupNode& c : children) AppendNode(&nodes[c.attempt_id], c.node);
    BATON_RETURN_IF_ERROR(WriteBlock(db, run_id, level, p, nodes));
  }
  return Status::Ok();
}

Status RecomputeAncestors(Db& db, int64_t run_id, std::set<int64_t> blocks) {
  for (int level = 1; level < kRollupLevels; ++level) {
    std::set<int64_t> parents;
    for (int64_t b : blocks) parents.insert(b >> kRollupFanoutBits);
    BATON_RETURN_IF_ERROR(RecomputeParents(db, run_id, level, parents));
    blocks = std::move(parents);
  }
  return Status::Ok();
}

Status MarkCovered(Db& db, int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db.Prepare("INSERT INTO step_rollup_runs (run_id, layout) VALUES (?1, ?2) "
                                    "ON CONFLICT (run_id) DO UPDATE SET layout = excluded.layout"));
  return s->Bind(1, run_id).Bind(2, kRollupLayout).Run();
}

}  // namespace

Result<bool> RollupsCoverRun(Db& db, int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db.Prepare("SELECT layout FROM step_rollup_runs WHERE run_id = ?1"));
  s->Bind(1, run_id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const bool covered = row && s->Int(0) == kRollupLayout;
  s->Reset();
  return covered;
}

Status RollupMaintainer::RebuildRun(Db& db, int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(Statement * del, db.Prepare("DELETE FROM step_rollups WHERE run_id = ?1"));
  BATON_RETURN_IF_ERROR(del->Bind(1, run_id).Run());
  BATON_ASSIGN_OR_RETURN(Statement * span,
                         db.Prepare("SELECT MIN(step), MAX(step) FROM steps WHERE run_id = ?1"));
  span->Bind(1, run_id);
  BATON_RETURN_IF_ERROR(span->Step().status());
  const std::optional<int64_t> lo = span->OptInt(0), hi = span->OptInt(1);
  span->Reset();
  if (lo && hi) {
    // In slices of 256 leaf blocks, so a long run is never held in memory whole.
    std::set<int64_t> all;
    for (int64_t b = RollupBlockOf(*lo, 0); b <= RollupBlockOf(*hi, 0); b += 256) {
      std::set<int64_t> slice;
      for (int64_t k = b; k < b + 256 && k <= RollupBlockOf(*hi, 0); ++k) slice.insert(k);
      BATON_RETURN_IF_ERROR(RecomputeLeaves(db, run_id, slice));
      all.insert(slice.begin(), slice.end());
    }
    BATON_RETURN_IF_ERROR(RecomputeAncestors(db, run_id, all));
  }
  return MarkCovered(db, run_id);
}

Status RollupMaintainer::Flush(Db& db) {
  if (!enabled_) {
    for (const auto& [run_id, blocks] : dirty_) {
      BATON_ASSIGN_OR_RETURN(Statement * s,
                             db.Prepare("DELETE FROM step_rollup_runs WHERE run_id = ?1"));
      BATON_RETURN_IF_ERROR(s->Bind(1, run_id).Run());
    }
    dirty_.clear();
    return Status::Ok();
  }
  for (const auto& [run_id, blocks] : dirty_) {
    BATON_ASSIGN_OR_RETURN(const bool covered, RollupsCoverRun(db, run_id));
    if (!covered) {
      BATON_RETURN_IF_ERROR(RebuildRun(db, run_id));
      continue;
    }
    BATON_RETURN_IF_ERROR(RecomputeLeaves(db, run_id, blocks));
    BATON_RETURN_IF_ERROR(RecomputeAncestors(db, run_id, blocks));
  }
  dirty_.clear();
  return Status::Ok();
}

Result<std::vector<StoredRollupNode>> ReadRollupNodes(Db& db, int64_t run_id, int level,
                                                      int64_t first_block, int64_t last_block) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db.Prepare("SELECT block, attempt_id, data FROM step_rollups WHERE run_id = ?1 AND "
                 "level = ?2 AND block BETWEEN ?3 AND ?4 ORDER BY block, attempt_id"));
  s->Bind(1, run_id).Bind(2, level).Bind(3, first_block).Bind(4, last_block);
  std::vector<StoredRollupNode> out;
  while (true) {
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (!row) break;
    StoredRollupNode n;
    n.block = s->Int(0);
    n.attempt_id = s->Int(1);
    if (!DecodeNode(s->BlobData(2), s->BlobSize(2), &n.node)) {
      s->Reset();
      return Status::Data("step_rollups: node of run " + std::to_string(run_id) + " level " +
                          std::to_string(level) + " block " + std::to_string(n.block) + " has " +
                          std::to_string(s->BlobSize(2)) + " bytes, not " +
                          std::to_string(sizeof(RollupNode)));
    }
    out.push_back(n);
  }
  return out;
}

namespace {

// The step rows `where` selects, with ?1 an id and ?2..?3 a step range.
Result<std::vector<SeriesRow>> ReadRowsWhere(Db& db, const std::string& sql, int64_t id,
                                             int64_t first, int64_t last) {
  BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare(sql));
  s->Bind(1, id).Bind(2, first).Bind(3, last);
  return SeriesRowTable().ReadAll(*s);
}

}  // namespace

Result<std::vector<SeriesRow>> ReadEffectiveRows(Db& db, int64_t attempt_id, int64_t first,
                                                 int64_t last) {
  // The steps primary key (attempt_id, step): one sequential range.
  static const std::string kSql = SeriesRowTable().Select(
      "WHERE attempt_id = ?1 AND step BETWEEN ?2 AND ?3 AND superseded = 0 ORDER BY step");
  return ReadRowsWhere(db, kSql, attempt_id, first, last);
}

Result<std::vector<SeriesRow>> ReadSupersededRowsOf(Db& db, int64_t attempt_id, int64_t first,
                                                    int64_t last) {
  static const std::string kSql = SeriesRowTable().Select(
      "WHERE attempt_id = ?1 AND step BETWEEN ?2 AND ?3 AND superseded = 1 ORDER BY step");
  return ReadRowsWhere(db, kSql, attempt_id, first, last);
}

Result<std::optional<int64_t>> ReadFirstEffectiveTokens(Db& db, int64_t run_id, int64_t step) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         db.Prepare("SELECT tokens FROM steps WHERE run_id = ?1 AND step >= ?2 AND "
                                    "superseded = 0 ORDER BY step LIMIT 1"));
  s->Bind(1, run_id).Bind(2, step);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const std::optional<int64_t> tokens = row ? std::optional<int64_t>(s->Int(0)) : std::nullopt;
  s->Reset();
  return tokens;
}

}  // namespace baton
