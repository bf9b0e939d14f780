// The series endpoint's rollup path against its row path (today's downsampler over every row),
// point for point, on runs filled through the real ingest path: resumes that supersede rows
// (exact and weights-only), skipped non-finite steps, rows ingested late for steps a later
// attempt already has, small ingest chunks (nodes cut across transactions), zoomed ranges,
// superseded points and every key. Also: the stored nodes equal a rebuild from the rows after
// every ingest, a rolled-back transaction leaves no node behind, interleaved attempts fall back
// to the rows, and the run page's per-attempt figures agree with SQL's.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "orchestrator/http/run_history_service.h"
#include "orchestrator/store/run_history_queries.h"
#include "orchestrator/store/series_rollups.h"
#include "orchestrator/store/store_internal.h"
#include "run_fixture.h"
#include "tests/common/temp_dir.h"
#include "tests/common/test_store.h"

using nlohmann::json;

namespace baton {
namespace {

using test::TempDir;

// Every stored node of a run, as (level, block, attempt, bytes) text lines.
std::vector<std::string> Nodes(Store& store, int64_t run_id) {
  std::vector<std::string> out;
  for (int level = 0; level < kRollupLevels; ++level) {
    Result<std::vector<StoredRollupNode>> nodes =
        ReadRollupNodes(StoreInternal::Db(store), run_id, level, 0, INT64_MAX);
    EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
    if (!nodes.ok()) continue;
    for (const StoredRollupNode& n : *nodes) {
      out.push_back(std::to_string(level) + "/" + std::to_string(n.block) + "/" +
                    std::to_string(n.attempt_id) + "/" + EncodeNode(n.node));
    }
  }
  return out;
}

class SeriesRollups : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = test::TestStore(tmp_ / "baton.db");
    Result<std::unique_ptr<Store>> s = Store::Open(db_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    pool_ = std::make_unique<StorePool>(db_, 2);
    ASSERT_TRUE(pool_->Warm(2).ok());
    service_ = std::make_unique<RunHistoryService>(pool_.get(), [] { return 1.8e9; });
  }

  int64_t Create(const webtest::RunSpec& spec, int64_t chunk_bytes = 8 << 20) {
    IngestOptions o;
    o.chunk_bytes = chunk_bytes;
    Result<int64_t> id = webtest::CreateRunThroughIngest(*store_, tmp_ / "runs", spec, o);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }

  json Series(int64_t run, SeriesRequest r) {
    Result<json> out = service_->GetSeries(run, r);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : json();
  }

  // The stored nodes equal a rebuild from the rows (inside a transaction rolled back after).
  void ExpectNodesMatchRebuild(int64_t run) {
    const std::vector<std::string> stored = Nodes(*store_, run);
    Result<Transaction> tx = store_->Begin();
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(RollupMaintainer::RebuildRun(StoreInternal::Db(*store_), run).ok());
    const std::vector<std::string> rebuilt = Nodes(*store_, run);
    tx->Rollback();
    ASSERT_EQ(stored.size(), rebuilt.size());
    for (size_t i = 0; i < stored.size(); ++i) EXPECT_EQ(stored[i], rebuilt[i]) << "node " << i;
  }

  // Both paths answer the same points for every key, point budget, range and part.
  void ExpectSamePoints(int64_t run, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
    int compared = 0, downsampled = 0;
    for (int64_t max_points : {16, 37, 200, 2000, 200000}) {
      for (const auto& [from, to] : ranges) {
        SeriesRequest r;
        r.keys = SeriesKeys();
        r.max_points = max_points;
        r.include_superseded = true;
        r.from_step = from;
        r.to_step = to;
        json fast = Series(run, r);
        r.rows_only = true;
        json slow = Series(run, r);
        ASSERT_EQ(fast["source"], "rollups") << "run " << run;
        ASSERT_EQ(slow["source"], "rows");
        fast.erase("source");
        slow.erase("source");
        for (SeriesKey k : SeriesKeys()) {
          const std::string key = Name(k);
          for (const char* part : {"series", "superseded"}) {
            const json& a = fast[part][key];
            const json& b = slow[part][key];
            ASSERT_EQ(a["step"], b["step"]) << part << " " << key << " max_points " << max_points
                                            << " range " << from << ".." << to;
            EXPECT_EQ(a, b) << part << " " << key << " max_points " << max_points;
            if (b["points"].get<int64_t>() < b["rows"].get<int64_t>()) ++downsampled;
          }
        }
        EXPECT_EQ(fast, slow);
        ++compared;
      }
    }
    EXPECT_GT(downsampled, 0);
    EXPECT_GT(compared, 0);
  }

  TempDir tmp_;
  std::string db_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<StorePool> pool_;
  std::unique_ptr<RunHistoryService> service_;
};

TEST_F(SeriesRollups, SamePointsAsTheRowsWithSupersededStepsAndZoom) {
  // 3 attempts: 0..17499, exact @ 15000 to 22499, weights-only @ 20000 to 29999: 5000 rows
  // superseded, nodes of every level cut by attempt boundaries. Ingested in 64 KiB chunks.
  const int64_t run = Create(webtest::DemoRunSpec("long-demo", 50), 64 << 10);
  ExpectNodesMatchRebuild(run);
  ExpectSamePoints(run, {{0, INT64_MAX},
                         {0, 0},
                         {14990, 15010},
                         {12345, 23456},
                         {16383, 16384},
                         {29000, 40000},
                         {50000, 60000}});
}

TEST_F(SeriesRollups, SamePointsWithSkippedStepsAndTinyChunks) {
  const int64_t run = Create(webtest::NonfiniteRunSpec(), 4096);
  ExpectNodesMatchRebuild(run);
  ExpectSamePoints(run, {{0, INT64_MAX}, {15, 15}, {16, 44}, {40, 43}});
  SeriesRequest r;
  r.keys = {SeriesKey::kLoss};
  json s = Series(run, r);
  EXPECT_EQ(s["nonfinite"]["steps"], 4);
  EXPECT_EQ(s["nonfinite"]["ranges"], json::parse("[[15,15],[42,44]]"));
}

TEST_F(SeriesRollups, LateRowsForStepsALaterAttemptHasStayConsistent) {
  webtest::RunSpec spec = webtest::DemoRunSpec("late-demo", 10);
  const int64_t run = Create(spec);
  // Attempt #1 logs 500 more steps after attempt #3 already ran them: ingested superseded.
  Result<RunRecord> rec = store_->GetRun(run);
  ASSERT_TRUE(rec.ok());
  const std::string path = RunFolder{rec->run_dir}.EventsFile("1001", 0);
  {
    std::ofstream out(path, std::ios::app);
    for (int64_t s = 3500; s < 4000; ++s) {
      out << json{{"type", "step"}, {"source", "trainer"}, {"time", 1.8e9 + double(s)},
                  {"step", s},      {"lr", 1.0},           {"loss", 100.0 + double(s)},
                  {"tokens", 5},    {"padded_tokens", 1}}
                 .dump()
          << "\n";
    }
  }
  ASSERT_TRUE(IngestRun(*store_, *rec).ok());
  ExpectNodesMatchRebuild(run);
  ExpectSamePoints(run, {{0, INT64_MAX}, {3000, 4500}});
}

TEST_F(SeriesRollups, RolledBackStepsLeaveNoNode) {
  const int64_t run = Create(webtest::LiveRunSpec("live", 100));
  const std::vector<std::string> before = Nodes(*store_, run);
  Result<std::vector<AttemptRecord>> attempts = store_->ListAttempts(run);
  ASSERT_TRUE(attempts.ok() && !attempts->empty());
  Status st = store_->Write([&]() -> Status {
    StepRecord s;
    s.run_id = run;
    s.attempt_id = attempts->front().id;
    s.step = 5000;
    s.time = 1.8e9;
    s.loss = 1.0;
    BATON_RETURN_IF_ERROR(store_->InsertStepInTx(s));
    return Status::Data("abandoned");
  });
  EXPECT_FALSE(st.ok());
  // The next commit flushes nothing of the abandoned step.
  ASSERT_TRUE(store_->Write([] { return Status::Ok(); }).ok());
  EXPECT_EQ(Nodes(*store_, run), before);
  ExpectNodesMatchRebuild(run);
}

TEST_F(SeriesRollups, InterleavedAttemptsFallBackToTheRows) {
  // #2 resumes at 100 and stops at 150; #3 resumes from #1's checkpoint at 300: #1's rows
  // 150..299 stay effective between #2's and #3's, so #1 is not one stretch of the series.
  webtest::RunSpec r;
  r.name = "interleaved";
  r.target_steps = 400;
  r.attempts = {
      webtest::Attempt("4004", 0, "fresh", 0, 350, 0, {}, "requeue", "preempted", 1.7e9),
      webtest::Attempt("4004", 1, "exact", 100, 150, 0, {}, "requeue", "preempted", 1.7e9 + 2000),
      webtest::Attempt("4004", 2, "exact", 300, 400, 0, {}, "done", "completed", 1.7e9 + 4000)};
  const int64_t run = Create(r);
  ExpectNodesMatchRebuild(run);
  SeriesRequest q;
  q.keys = {SeriesKey::kLoss};
  q.max_points = 16;
  json fast = Series(run, q);
  EXPECT_EQ(fast["source"], "rows");
  q.rows_only = true;
  json slow = Series(run, q);
  EXPECT_EQ(fast["series"], slow["series"]);
}

TEST_F(SeriesRollups, AttemptFiguresAgreeWithSql) {
  const int64_t run = Create(webtest::DemoRunSpec("stats-demo", 5));
  Result<std::vector<AttemptStepStats>> fast = ReadAttemptStepStats(*store_, run);
  ASSERT_TRUE(fast.ok());
  // Without rollups (the marker dropped, inside a rolled-back transaction) the SQL path answers.
  Result<Transaction> tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(StoreInternal::Db(*store_).Exec("DELETE FROM step_rollup_runs").ok());
  Result<std::vector<AttemptStepStats>> slow = ReadAttemptStepStats(*store_, run);
  tx->Rollback();
  ASSERT_TRUE(slow.ok());
  ASSERT_EQ(fast->size(), 3u);
  ASSERT_EQ(fast->size(), slow->size());
  for (size_t i = 0; i < fast->size(); ++i) {
    const AttemptStepStats &a = (*fast)[i], &b = (*slow)[i];
    EXPECT_EQ(a.attempt_id, b.attempt_id);
    EXPECT_EQ(a.effective_steps, b.effective_steps);
    EXPECT_EQ(a.superseded_steps, b.superseded_steps);
    EXPECT_EQ(a.warmup_steps, b.warmup_steps);
    EXPECT_EQ(a.nonfinite_steps, b.nonfinite_steps);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.padded_tokens, b.padded_tokens);
    EXPECT_NEAR(a.step_time_s, b.step_time_s, 1e-9 * b.step_time_s);
    EXPECT_NEAR(a.superseded_step_time_s, b.superseded_step_time_s, 1e-9);
    EXPECT_EQ(a.first_step, b.first_step);
    EXPECT_EQ(a.last_step, b.last_step);
    EXPECT_EQ(a.first_time, b.first_time);
    EXPECT_EQ(a.last_time, b.last_time);
  }
}

}  // namespace
}  // namespace baton
