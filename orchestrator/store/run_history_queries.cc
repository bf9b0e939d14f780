#include "orchestrator/store/run_history_queries.h"

#include <map>

#include "orchestrator/store/record_columns.h"
#include "orchestrator/store/series_rollups.h"
#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

// The runs page's filters (RunListQuery) over parameters ?1 and ?5..?10; fixed text, values bound.
// A parameter that may be NULL is compared first, then tested: PostgreSQL takes its type from
// its first use, and `? IS NULL` alone gives it none.
std::string FilterSql(const std::string& t) {
  return "(?1 = '' OR " + t + "status = ?1) AND (?5 = '' OR instr(lower(" + t +
         "name), lower(?5)) > 0) AND (?6 = '' OR " + t + "partition = ?6) AND (" + t +
         "created_at >= ?7 OR ?7 IS NULL) AND (" + t +
         "created_at < ?8 OR ?8 IS NULL) AND (?9 = '' OR " + t + "owner = ?9) AND (?10 = '' OR " +
         t + "cluster = ?10)";
}

void BindFilters(Statement* s, const RunListQuery& q) {
  s->Bind(1, q.status)
      .Bind(5, q.name)
      .Bind(6, q.partition)
      .Bind(7, q.created_from)
      .Bind(8, q.created_to)
      .Bind(9, q.owner)
      .Bind(10, q.cluster);
}

// The runs table's per-run figures as one query: correlated subqueries pick each run's last
// effective step (index steps_run_step), newest checkpoint and attempt span; the joins then read
// those rows. Sorting happens in SQL so pagination is stable over the whole table. The run's own
// columns are the store's (record_columns.h) but for the frozen config, which the table does not
// show; ReadSummaryRow reads them in the same order.
const std::string& SummarySelect() {
  static const std::string kSql =
      "WITH r AS (\n  SELECT " + RunTable().SelectList("runs.", "config") + R"sql(,
         (SELECT COUNT(*) FROM attempts a WHERE a.run_id = runs.id) AS n_attempts,
         (SELECT s.step FROM steps s WHERE s.run_id = runs.id AND s.superseded = 0
            ORDER BY s.step DESC LIMIT 1) AS last_step,
         (SELECT c.step FROM checkpoints c WHERE c.run_id = runs.id
            ORDER BY c.step DESC LIMIT 1) AS ckpt_step,
         (SELECT MIN(a.started_at) FROM attempts a WHERE a.run_id = runs.id) AS first_start,
         (SELECT MAX(a.ended_at) FROM attempts a WHERE a.run_id = runs.id) AS last_end,
         (SELECT COUNT(*) FROM attempts a WHERE a.run_id = runs.id AND a.ended_at IS NULL)
            AS n_open
  FROM runs WHERE )sql" +
      FilterSql("runs.") + R"sql( AND (?4 < 0 OR runs.id = ?4))
SELECT )sql" +
      RunTable().SelectList("r.", "config") +
      R"sql(, r.n_attempts, r.last_step, ls.loss, ls.lr, ls.time, r.ckpt_step,
       c.time, r.first_start, r.last_end, r.n_open
FROM r
LEFT JOIN steps ls ON ls.run_id = r.id AND ls.step = r.last_step AND ls.superseded = 0
LEFT JOIN checkpoints c ON c.run_id = r.id AND c.step = r.ckpt_step
)sql";
  return kSql;
}

// ORDER BY expressions for each sort key: fixed text, so the statement stays a prepared one
// with bound values only (one cached statement per key and direction).
const char* SortExpression(RunSortKey key) {
  switch (key) {
    case RunSortKey::kCreated:
      return "r.created_at";
    case RunSortKey::kId:
      return "r.id";
    case RunSortKey::kName:
      return "lower(r.name)";  // case-blind on both backends (no NOCASE in PostgreSQL)
    case RunSortKey::kStatus:
      return "r.status";
    case RunSortKey::kProgress:
      return "(CAST(COALESCE(r.last_step + 1, 0) AS DOUBLE PRECISION) / "
             "CASE WHEN r.target_steps > 1 THEN r.target_steps ELSE 1 END)";
    case RunSortKey::kLastLoss:
      return "ls.loss";
    case RunSortKey::kLastLr:
      return "ls.lr";
    case RunSortKey::kUpdated:
      return "r.updated_at";
  }
  return "r.created_at";
}

RunSummary ReadSummaryRow(const Statement& s) {
  RunSummary out;
  int col = RunTable().ReadInto(s, &out.run, /*first=*/0, /*except=*/"config");
  out.attempts = s.Int(col++);
  out.last_step = s.OptInt(col++);
  out.last_loss = s.Double(col++);
  out.last_lr = s.Double(col++);
  out.last_step_time = s.OptDouble(col++);
  out.last_checkpoint_step = s.OptInt(col++);
  out.last_checkpoint_time = s.OptDouble(col++);
  out.first_started_at = s.OptDouble(col++);
  out.last_ended_at = s.OptDouble(col++);
  out.has_open_attempt = s.Int(col++) > 0;
  return out;
}

Status FillAttemptBriefs(Store& store, RunSummary* summary) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare("SELECT job_id, restart_count, end_reason, step0, last_step "
                                       "FROM attempts WHERE run_id = ?1 ORDER BY id"));
  s->Bind(1, summary->run.id);
  BATON_ASSIGN_OR_RETURN(summary->attempt_list, s->Collect<AttemptBrief>([](const Statement& r) {
    return AttemptBrief{r.Text(0), r.Int(1), r.Text(2), r.OptInt(3), r.OptInt(4)};
  }));
  return Status::Ok();
}

// Runs the summary query for one page (run_id < 0) or one run.
Result<std::vector<RunSummary>> QuerySummaries(Store& store, const RunListQuery& q,
                                               int64_t run_id) {
  std::string sql = SummarySelect() + " ORDER BY " + SortExpression(q.sort) +
                    (q.descending ? " DESC" : " ASC") + " NULLS LAST, r.id " +
                    (q.descending ? "DESC" : "ASC") + " LIMIT ?2 OFFSET ?3";
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(sql));
  BindFilters(s, q);
  s->Bind(2, q.limit).Bind(3, q.offset).Bind(4, run_id);
  BATON_ASSIGN_OR_RETURN(std::vector<RunSummary> out, s->Collect<RunSummary>(ReadSummaryRow));
  for (RunSummary& r : out) BATON_RETURN_IF_ERROR(FillAttemptBriefs(store, &r));
  return out;
}

}  // namespace

std::optional<RunSortKey> ParseRunSortKey(const std::string& name) {
  static const std::map<std::string, RunSortKey> kKeys = {
      {"created", RunSortKey::kCreated},   {"id", RunSortKey::kId},
      {"name", RunSortKey::kName},         {"status", RunSortKey::kStatus},
      {"progress", RunSortKey::kProgress}, {"last_loss", RunSortKey::kLastLoss},
      {"last_lr", RunSortKey::kLastLr},    {"updated", RunSortKey::kUpdated}};
  auto it = kKeys.find(name);
  if (it == kKeys.end()) return std::nullopt;
  return it->second;
}

Result<RunSummaryPage> ListRunSummaries(Store& store, const RunListQuery& q) {
  RunSummaryPage page;
  BATON_ASSIGN_OR_RETURN(
      Statement * count,
      StoreInternal::Db(store).Prepare("SELECT COUNT(*) FROM runs WHERE " + FilterSql("")));
  BindFilters(count, q);
  BATON_ASSIGN_OR_RETURN(const bool row, count->Step());
  page.total = row ? count->Int(0) : 0;
  BATON_ASSIGN_OR_RETURN(page.runs, QuerySummaries(store, q, /*run_id=*/-1));
  return page;
}

Result<RunSummary> GetRunSummary(Store& store, int64_t run_id) {
  RunListQuery q;
  q.limit = 1;
  BATON_ASSIGN_OR_RETURN(std::vector<RunSummary> runs, QuerySummaries(store, q, run_id));
  if (runs.empty()) return Status::NotFound("no run with id " + std::to_string(run_id));
  // The frozen config comes from the store's own reader (one place that knows the column).
  BATON_ASSIGN_OR_RETURN(RunRecord full, store.GetRun(run_id));
  RunSummary out = std::move(runs.front());
  out.run.config = std::move(full.config);
  return out;
}

Result<std::vector<SeriesRow>> ReadSeriesRows(Store& store, int64_t run_id,
                                              bool include_superseded) {
  // Attempt by attempt through the steps primary key (attempt_id, step): a sequential range
  // scan per attempt, cheaper than the (run_id, step) index plus a lookup per row.
  Db& db = StoreInternal::Db(store);
  BATON_ASSIGN_OR_RETURN(Statement * attempts,
                         db.Prepare("SELECT id FROM attempts WHERE run_id = ?1 ORDER BY id"));
  attempts->Bind(1, run_id);
  BATON_ASSIGN_OR_RETURN(const std::vector<int64_t> ids,
                         attempts->Collect<int64_t>([](const Statement& r) { return r.Int(0); }));
  static const std::string kSql = SeriesRowTable().Select(
      "WHERE attempt_id = ?1 AND (?2 <> 0 OR superseded = 0) ORDER BY step");
  BATON_ASSIGN_OR_RETURN(Statement * s, db.Prepare(kSql));
  std::vector<SeriesRow> rows;
  for (int64_t id : ids) {
    s->Bind(1, id).Bind(2, static_cast<int64_t>(include_superseded));
    while (true) {
      BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
      if (!row) break;
      rows.push_back(SeriesRowTable().Read(*s));
    }
    s->Reset();
  }
  return rows;
}

Result<std::vector<int64_t>> ReadEffectiveNonfiniteSteps(Store& store, int64_t run_id, int64_t from,
                                                         int64_t to) {
  // The partial index, as Store::ListNonfiniteSteps: a run with no skipped step reads nothing.
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare(
          "SELECT step FROM steps INDEXED BY steps_nonfinite WHERE run_id = ?1 AND "
          "nonfinite = 1 AND superseded = 0 AND step BETWEEN ?2 AND ?3 ORDER BY step"));
  s->Bind(1, run_id).Bind(2, from).Bind(3, to);
  return s->Collect<int64_t>([](const Statement& r) { return r.Int(0); });
}

// The same figures from the run's top-level rollup nodes and its superseded rows (partial index
// steps_superseded): no scan of the effective rows. Sums of seconds may differ from SQL's SUM in
// the last bits (another order of additions).
Result<std::vector<AttemptStepStats>> ReadAttemptStepStatsFromRollups(Store& store,
                                                                      int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(
      Statement * ids,
      StoreInternal::Db(store).Prepare("SELECT id FROM attempts WHERE run_id = ?1 ORDER BY id"));
  ids->Bind(1, run_id);
  BATON_ASSIGN_OR_RETURN(const std::vector<int64_t> attempt_ids,
                         ids->Collect<int64_t>([](const Statement& r) { return r.Int(0); }));
  BATON_ASSIGN_OR_RETURN(
      const std::vector<StoredRollupNode> top,
      ReadRollupNodes(StoreInternal::Db(store), run_id, kRollupLevels - 1, 0, INT64_MAX));
  // Effective rows under the attempt's id, superseded ones under minus it.
  std::map<int64_t, RollupNode> effective;
  for (const StoredRollupNode& n : top) AppendNode(&effective[n.attempt_id], n.node);
  struct Sup {
    int64_t attempt_id, rows;
    double step_time_s, min_time, max_time;
  };
  std::vector<Sup> superseded;
  for (const auto& [id, n] : effective) {
    if (id < 0 && n.rows > 0) {
      superseded.push_back({-id, n.rows, n.step_time_s, n.min_time, n.max_time});
    }
  }
  std::vector<AttemptStepStats> out;
  for (int64_t id : attempt_ids) {
    AttemptStepStats a;
    a.attempt_id = id;
    std::optional<double> lo, hi;
    if (auto it = effective.find(id); it != effective.end() && it->second.rows > 0) {
      const RollupNode& n = it->second;
      a.effective_steps = n.rows;
      a.warmup_steps = n.warmup_rows;
      a.nonfinite_steps = n.nonfinite_rows;
      a.tokens = n.tokens;
      a.padded_tokens = n.padded_tokens;
      a.step_time_s = n.step_time_s;
      a.first_step = n.first_step();
      a.last_step = n.last_step();
      lo = n.min_time;
      hi = n.max_time;
    }
    for (const Sup& s : superseded) {
      if (s.attempt_id != id) continue;
      a.superseded_steps = s.rows;
      a.superseded_step_time_s = s.step_time_s;
      lo = lo ? std::min(*lo, s.min_time) : s.min_time;
      hi = hi ? std::max(*hi, s.max_time) : s.max_time;
    }
    a.first_time = lo;
    a.last_time = hi;
    out.push_back(a);
  }
  return out;
}

Result<std::vector<AttemptStepStats>> ReadAttemptStepStats(Store& store, int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(const bool covered, RollupsCoverRun(StoreInternal::Db(store), run_id));
  if (covered) return ReadAttemptStepStatsFromRollups(store, run_id);
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(R"sql(
SELECT a.id,
       COALESCE(SUM(CASE WHEN s.superseded = 0 THEN 1 ELSE 0 END), 0),
       COALESCE(SUM(CASE WHEN s.superseded = 1 THEN 1 ELSE 0 END), 0),
       COALESCE(SUM(CASE WHEN s.superseded = 0 AND s.in_warmup <> 0 THEN 1 ELSE 0 END), 0),
       COALESCE(SUM(CASE WHEN s.superseded = 0 THEN s.tokens END), 0),
       COALESCE(SUM(CASE WHEN s.superseded = 0 THEN s.padded_tokens END), 0),
       COALESCE(SUM(CASE WHEN s.superseded = 0 THEN s.step_time_s END), 0),
       COALESCE(SUM(CASE WHEN s.superseded = 1 THEN s.step_time_s END), 0),
       MIN(CASE WHEN s.superseded = 0 THEN s.step END),
       MAX(CASE WHEN s.superseded = 0 THEN s.step END),
       MIN(s.time), MAX(s.time),
       COALESCE(SUM(CASE WHEN s.superseded = 0 AND s.nonfinite <> 0 THEN 1 ELSE 0 END), 0)
FROM attempts a LEFT JOIN steps s ON s.attempt_id = a.id
WHERE a.run_id = ?1 GROUP BY a.id ORDER BY a.id)sql"));
  s->Bind(1, run_id);
  return s->Collect<AttemptStepStats>([](const Statement& r) {
    AttemptStepStats a;
    a.attempt_id = r.Int(0);
    a.effective_steps = r.Int(1);
    a.superseded_steps = r.Int(2);
    a.warmup_steps = r.Int(3);
    a.tokens = r.Int(4);
    a.padded_tokens = r.Int(5);
    a.step_time_s = r.Double(6);
    a.superseded_step_time_s = r.Double(7);
    a.first_step = r.OptInt(8);
    a.last_step = r.OptInt(9);
    a.first_time = r.OptDouble(10);
    a.last_time = r.OptDouble(11);
    a.nonfinite_steps = r.Int(12);
    return a;
  });
}

void ReleaseReadSnapshot(Store& store) { StoreInternal::Db(store).ReleaseReadSnapshot(); }

}  // namespace baton
