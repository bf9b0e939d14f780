// StoreCopy: `baton store copy` over real stores. A history with a row in every table (runs,
// attempts, steps with superseded and non-finite rows and their rollups, micro-steps,
// checkpoints, cursors, time buckets, budgets, probes, tokens, the audit, incidents and their
// outbox, a sweep, the node ledger) goes from the test's store to a SQLite file and from there to
// another store of the test's backend — so the `pg.` entry copies PostgreSQL → SQLite →
// PostgreSQL — and every table reads the same, row for row, at each end. --owner keeps one
// user's runs and what hangs off them; a non-empty target is refused unchanged; --merge gives new
// ids and keeps both histories apart; a merge that fails half-way leaves the target as it was; a
// source of another schema version is refused naming both.
#include "orchestrator/store/store_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "orchestrator/store/record_json.h"
#include "orchestrator/store/sql_dialect.h"
#include "orchestrator/store/store_check.h"
#include "store_copy_fixture.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Dump;
using test::FillHistory;
using test::OpenSpec;
using test::OpenStore;
using test::SameValue;
using test::TempDir;
using test::TestStore;

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const Status st_ = (expr);                                \
    ASSERT_TRUE(st_.ok()) << #expr << ": " << st_.ToString(); \
  } while (0)

Result<StoreCopyReport> Copy(const std::string& from, const std::string& to,
                             const std::string& owner = "", bool merge = false) {
  return CopyStore({from, to, owner, merge});
}

size_t TotalRows(const std::map<std::string, std::vector<std::string>>& dump) {
  size_t n = 0;
  for (const auto& [t, rows] : dump) n += rows.size();
  return n;
}

TEST(StoreCopyPlan, CoversEveryTableAndReferenceOfTheSchema) {
  TempDir tmp;
  std::unique_ptr<Store> s = OpenStore(tmp / "plan.db");
  Result<std::vector<std::string>> tables = ListTables(StoreInternal::Db(*s));
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  std::set<std::string> planned;
  for (const CopyTable& t : CopyPlan()) planned.insert(t.name);
  EXPECT_EQ(std::set<std::string>(tables->begin(), tables->end()), planned);
  for (const SchemaReference& r : SchemaReferences()) {
    const CopyTable* t = FindCopyTable(r.table);
    ASSERT_NE(t, nullptr) << r.table;
    bool found = false;
    for (const CopyRef& ref : t->refs) found |= std::string(ref.column) == r.column;
    EXPECT_TRUE(found) << r.table << "." << r.column << " is not mapped by the copy";
  }
}

TEST(StoreCopy, EveryTableReadsTheSameAfterACopyEitherWay) {
  TempDir tmp;
  const std::string src_spec = TestStore(tmp / "src.db");
  const std::string mid_spec = "sqlite:" + (tmp / "mid.db");
  const std::string dst_spec = TestStore(tmp / "dst.db");
  std::unique_ptr<Store> src = OpenStore(tmp / "src.db");
  FillHistory(*src, tmp / "runs", 1.7e9);
  const auto before = Dump(*src);
  for (const char* t : {"runs",
                        "attempts",
                        "steps",
                        "step_rollups",
                        "step_rollup_runs",
                        "microsteps",
                        "checkpoints",
                        "ingest_cursors",
                        "time_buckets",
                        "stop_save_budgets",
                        "write_probes",
                        "api_tokens",
                        "run_actions",
                        "incidents",
                        "alert_deliveries",
                        "sweeps",
                        "sweep_members",
                        "nodes",
                        "node_incidents",
                        "node_actions",
                        "node_log_cursors",
                        "evals"}) {
    EXPECT_FALSE(before.at(t).empty()) << "the fixture has no " << t;
  }
  Result<StoreCopyReport> there = Copy(src_spec, mid_spec);
  ASSERT_TRUE(there.ok()) << there.status().ToString();
  EXPECT_FALSE(there->refused());
  EXPECT_EQ(there->copied("steps"), static_cast<int64_t>(before.at("steps").size()));
  Result<StoreCopyReport> back = Copy(mid_spec, dst_spec);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  src.reset();
  std::unique_ptr<Store> mid = OpenSpec(mid_spec);
  std::unique_ptr<Store> dst = OpenStore(tmp / "dst.db");
  for (const auto& [table, rows] : Dump(*mid)) EXPECT_EQ(rows, before.at(table)) << table;
  for (const auto& [table, rows] : Dump(*dst)) EXPECT_EQ(rows, before.at(table)) << table;
  // New rows of the target's own processes take ids past the copied ones.
  const RunRecord next = test::MakeRun(*dst, tmp / "runs/new");
  EXPECT_EQ(next.id, 4);
}

TEST(StoreCopy, OwnerKeepsOnlyThatUsersRunsAndWhatHangsOffThem) {
  TempDir tmp;
  std::unique_ptr<Store> src = OpenStore(tmp / "src.db");
  const std::vector<int64_t> runs = FillHistory(*src, tmp / "runs", 1.7e9);
  const std::string to = "sqlite:" + (tmp / "alice.db");
  Result<StoreCopyReport> r = Copy(TestStore(tmp / "src.db"), to, "alice");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::unique_ptr<Store> dst = OpenSpec(to);
  Result<std::vector<RunRecord>> listed = dst->ListRuns();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  for (const RunRecord& run : *listed) {
    EXPECT_EQ(run.owner, "alice");
    EXPECT_EQ(dst->CountSteps(run.id, true).value(), src->CountSteps(run.id, true).value());
    EXPECT_EQ(RunJson(run), RunJson(src->GetRun(run.id).value()));
  }
  const auto d = Dump(*dst);
  EXPECT_EQ(d.at("attempts").size(), 4u);
  EXPECT_EQ(d.at("api_tokens").size(), 0u) << "a server's tokens went to one person's copy";
  EXPECT_EQ(d.at("write_probes").size(), 0u);
  EXPECT_EQ(d.at("sweeps").size(), 1u);
  EXPECT_EQ(d.at("sweep_members").size(), 1u);  // bob's member stays behind
  EXPECT_EQ(d.at("incidents").size(), 2u);
  EXPECT_EQ(d.at("alert_deliveries").size(), 2u);  // the sent ones; the lab sends the rest
  EXPECT_EQ(d.at("nodes").size(), 1u);
  EXPECT_EQ(d.at("node_incidents").size(), 2u);
  EXPECT_EQ(d.at("node_log_cursors").size(), 2u);
  for (const std::string& line : d.at("node_incidents")) {
    EXPECT_EQ(line.find("bob"), std::string::npos) << line;
  }
  EXPECT_EQ(d.at("runs").size(), 2u);
  EXPECT_NE(runs[1], 0);
}

TEST(StoreCopy, ANonEmptyTargetIsRefusedAndLeftAsItWas) {
  TempDir tmp;
  std::unique_ptr<Store> src = OpenStore(tmp / "src.db");
  FillHistory(*src, tmp / "runs", 1.7e9);
  std::unique_ptr<Store> dst = OpenStore(tmp / "dst.db");
  test::MakeRun(*dst, tmp / "other/run");
  const auto before = Dump(*dst);
  Result<StoreCopyReport> r = Copy(TestStore(tmp / "src.db"), TestStore(tmp / "dst.db"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->refused());
  EXPECT_EQ(r->target_rows.at(0), std::make_pair(std::string("runs"), int64_t{1}));
  EXPECT_TRUE(r->tables.empty());
  EXPECT_EQ(Dump(*dst), before);
}

TEST(StoreCopy, MergeGivesNewIdsAndKeepsBothHistoriesApart) {
  TempDir tmp;
  std::unique_ptr<Store> src = OpenStore(tmp / "src.db");
  const std::vector<int64_t> src_runs = FillHistory(*src, tmp / "src-runs", 1.7e9);
  const std::string to = "sqlite:" + (tmp / "lab.db");
  std::unique_ptr<Store> lab = OpenSpec(to);
  const std::vector<int64_t> lab_runs = FillHistory(*lab, tmp / "lab-runs", 1.6e9);
  const auto lab_before = Dump(*lab);
  Result<StoreCopyReport> r = Copy(TestStore(tmp / "src.db"), to, "", /*merge=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const TableCopyCount& t : r->tables) {
    if (t.table == "nodes") {
      EXPECT_EQ(t.reused, 1) << "the same node is one row";
    }
    if (t.table == "api_tokens") {
      EXPECT_EQ(t.kept_target, 2) << "the lab's tokens stay";
    }
  }
  Result<std::vector<RunRecord>> all = lab->ListRuns();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 6u);
  // The lab's own rows are untouched; every copied run has a new id and the same content.
  for (int64_t id : lab_runs) {
    EXPECT_EQ(lab->GetRun(id)->run_dir.find(tmp / "lab-runs"), 0u);
  }
  for (size_t i = 0; i < src_runs.size(); ++i) {
    const RunRecord from = src->GetRun(src_runs[i]).value();
    Result<RunRecord> to_run = lab->FindRun(std::to_string(lab_runs.back() + 1 + int64_t(i)));
    ASSERT_TRUE(to_run.ok());
    EXPECT_EQ(to_run->run_dir, from.run_dir);
    nlohmann::json a = RunJson(from), b = RunJson(*to_run);
    a.erase("id");
    b.erase("id");
    EXPECT_EQ(a, b);
    const auto fa = src->ListAttempts(from.id).value(), ta = lab->ListAttempts(to_run->id).value();
    ASSERT_EQ(fa.size(), ta.size());
    for (size_t k = 0; k < fa.size(); ++k) {
      EXPECT_EQ(AttemptJson(fa[k]), AttemptJson(ta[k]));
      EXPECT_GT(ta[k].id, fa.back().id);
    }
    const auto fs = src->ListSteps(from.id, {0, INT64_MAX, true}).value();
    const auto ts = lab->ListSteps(to_run->id, {0, INT64_MAX, true}).value();
    ASSERT_EQ(fs.size(), ts.size());
    for (size_t k = 0; k < fs.size(); ++k) {
      EXPECT_EQ(ts[k].run_id, to_run->id);
      EXPECT_EQ(ts[k].step, fs[k].step);
      EXPECT_EQ(ts[k].superseded, fs[k].superseded);
      EXPECT_TRUE(SameValue(ts[k].loss, fs[k].loss)) << ts[k].step;
      EXPECT_EQ(ts[k].nonfinite, fs[k].nonfinite);
    }
  }
  Result<std::vector<DanglingReference>> dangling = FindDanglingRows(StoreInternal::Db(*lab));
  ASSERT_TRUE(dangling.ok());
  EXPECT_TRUE(dangling->empty()) << DanglingRowsText(*dangling, 5);
  const auto after = Dump(*lab);
  for (const auto& [table, rows] : lab_before) {
    for (const std::string& row : rows) {
      EXPECT_EQ(std::count(after.at(table).begin(), after.at(table).end(), row), 1)
          << table << " lost or changed: " << row;
    }
  }
  // The same history merged again: its runs are there already. Refused, nothing written.
  Result<StoreCopyReport> again = Copy(TestStore(tmp / "src.db"), to, "", true);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kData);
  EXPECT_NE(again.status().message().find("is already in the target"), std::string::npos);
  EXPECT_EQ(Dump(*lab), after);
}

TEST(StoreCopy, AFailedMergeLeavesTheTargetAsItWas) {
  TempDir tmp;
  std::unique_ptr<Store> src = OpenStore(tmp / "src.db");
  FillHistory(*src, tmp / "runs", 1.7e9);
  // The target already has the source's last run (same folder): the first two runs are written
  // before the third clashes, and the whole copy rolls back.
  std::unique_ptr<Store> dst = OpenStore(tmp / "dst.db");
  test::MakeRun(*dst, tmp / "runs/alice-2");
  const auto before = Dump(*dst);
  Result<StoreCopyReport> r = Copy(TestStore(tmp / "src.db"), TestStore(tmp / "dst.db"), "", true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(tmp / "runs/alice-2"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(Dump(*dst), before);
  EXPECT_EQ(TotalRows(before), 1u);
}

TEST(StoreCopy, ASourceOfAnotherSchemaVersionIsRefusedNamingBoth) {
  TempDir tmp;
  std::unique_ptr<Store> src = OpenStore(tmp / "src.db");
  FillHistory(*src, tmp / "runs", 1.7e9);
  Db& db = StoreInternal::Db(*src);
  const int64_t newer = Store::LatestSchemaVersion() + 1;
  ASSERT_OK(db.Exec(SetSchemaVersionSql(db.backend(), newer)));
  const std::string to = tmp / "new.db";
  Result<StoreCopyReport> r = Copy(TestStore(tmp / "src.db"), "sqlite:" + to);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kData);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("schema version " + std::to_string(newer)), std::string::npos) << m;
  EXPECT_NE(m.find("at " + std::to_string(newer - 1)), std::string::npos) << m;
  EXPECT_FALSE(std::filesystem::exists(to)) << "a refused copy created its target";
  // Bad specs and one store named twice are usage errors; a missing SQLite source is named.
  EXPECT_EQ(Copy("mysql://x", "sqlite:" + to).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Copy("sqlite:" + to + "x", "sqlite:" + to + "x").status().code(),
            Code::kInvalidArgument);
  Result<StoreCopyReport> missing = Copy("sqlite:" + (tmp / "none.db"), "sqlite:" + to);
  EXPECT_EQ(missing.status().code(), Code::kIo);
  EXPECT_FALSE(std::filesystem::exists(to));
}

}  // namespace
}  // namespace baton
