// Eval results in the store: the evals table round-trips every column (on SQLite, and on
// PostgreSQL through the pg.orchestrator.* entries), a later arrival for a step replaces the
// row, and both sources reach it: `eval` lines of an events file (IngestRun) and a run's
// evals/step_<N>.json files (the sync pass), written here by hand as the trainer and
// `baton-train eval` write them. A bad file is named, never fatal; /metrics' figures read the
// latest result, and the sweep view each member's best.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "orchestrator/history/sweep_view.h"
#include "orchestrator/ingest/eval_file_ingest.h"
#include "orchestrator/ingest/event_ingester.h"
#include "orchestrator/reconcile/sync_pass.h"
#include "orchestrator/store/run_metrics.h"
#include "orchestrator/store/store_evals.h"
#include "orchestrator/store/store_sweeps.h"
#include "orchestrator/store/time_bucket_store.h"
#include "schema/run_folder.h"
#include "test_util.h"

namespace baton {
namespace {

using nlohmann::json;
using test::Append;
using test::MakeRunWithJob;
using test::OpenStore;
using test::StartLine;
using test::StepLine;
using test::TempDir;

// An eval result as the trainer writes it (EvalEvent's keys; NaN and Inf as null).
json EvalJson(int64_t step, json loss, double video, double action, const std::string& mode) {
  return json{{"step", step},
              {"checkpoint", "/runs/r/checkpoints/step_" + std::to_string(step)},
              {"mode", mode},
              {"metrics", {{"loss", loss}, {"loss_video", video}, {"loss_action", action}}},
              {"episodes", 4},
              {"valid_frames", 120},
              {"seconds", 1.25},
              {"config_hash", "cfg123"},
              {"job_id", "7"}};
}

// One events line: the record plus what EventWriter adds.
std::string EventLine(json rec) {
  rec["type"] = "eval";
  rec["time"] = 2.0;
  rec["source"] = "trainer";
  return rec.dump() + "\n";
}

// evals/step_<N>.json as WriteEvalResult writes it (the record and its type).
void WriteEvalFile(const RunRecord& run, const std::string& name, const std::string& text) {
  std::filesystem::create_directories(run.run_dir + "/evals");
  std::ofstream(run.run_dir + "/evals/" + name, std::ios::trunc) << text;
}
void WriteEvalFile(const RunRecord& run, json rec) {
  rec["type"] = "eval";
  WriteEvalFile(run, "step_" + std::to_string(rec["step"].get<int64_t>()) + ".json",
                rec.dump() + "\n");
}

std::vector<EvalRecord> Evals(Store& store, int64_t run_id) {
  Result<std::vector<EvalRecord>> r = ListEvals(store, run_id);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<EvalRecord>{};
}

bool Mentions(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines) {
    if (l.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(StoreEvals, RoundTripInStepOrderAndALaterArrivalReplacesTheRow) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const RunRecord run = MakeRunWithJob(*store, tmp / "run", "r", 10, "7");
  const EvalRecord a{run.id, 300, 0.75, 0.5, 0.25,     "job",  5,
                     160,    3.5, "h1", "8", "/c/300", "file", 100.5};
  const EvalRecord b{run.id, 100,      1.5,  kNoValue, 0.125,    "inline",       2,
                     64,     kNoValue, "h0", "7",      "/c/100", kEvalFromEvent, 90.25};
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    BATON_RETURN_IF_ERROR(UpsertEvalInTx(*store, a));
                    return UpsertEvalInTx(*store, b);
                  })
                  .ok());
  std::vector<EvalRecord> rows = Evals(*store, run.id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].step, 100);  // step order, not arrival order
  EXPECT_TRUE(SameEvalResult(rows[0], b));
  EXPECT_TRUE(std::isnan(rows[0].loss_video));
  EXPECT_TRUE(std::isnan(rows[0].seconds));
  EXPECT_EQ(rows[0].source, "event");
  EXPECT_EQ(rows[0].arrived_at, 90.25);
  EXPECT_TRUE(SameEvalResult(rows[1], a));
  EXPECT_EQ(rows[1].mode, "job");
  EXPECT_EQ(rows[1].valid_frames, 160);

  EvalRecord again = a;  // recomputed at the same step: the newest stands, one row per step
  again.loss = 0.625;
  again.job_id = "9";
  again.arrived_at = 200;
  ASSERT_TRUE(store->Write([&] { return UpsertEvalInTx(*store, again); }).ok());
  rows = Evals(*store, run.id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].loss, 0.625);
  EXPECT_EQ(rows[1].job_id, "9");
  EXPECT_EQ(rows[1].arrived_at, 200);

  const std::optional<EvalRecord> best = BestEval(rows);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->step, 300);
  EXPECT_EQ(EvalsJson(rows).dump(),
            R"([{"metrics":{"loss":1.5,"loss_action":0.125,"loss_video":null},"step":100},)"
            R"({"metrics":{"loss":0.625,"loss_action":0.25,"loss_video":0.5},"step":300}])");
}

TEST(StoreEvals, MetricsReadTheLatestEvaluatedStep) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const RunRecord run = MakeRunWithJob(*store, tmp / "run", "r", 10, "7");
  const RunRecord none = MakeRunWithJob(*store, tmp / "other", "o", 10, "8");
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    BATON_RETURN_IF_ERROR(UpsertEvalInTx(
                        *store, {run.id, 200, 0.25, 0.2, 0.05, "job", 1, 1, 1, "", "", "", "", 1}));
                    return UpsertEvalInTx(
                        *store, {run.id, 100, 0.5, 0.4, 0.1, "job", 1, 1, 1, "", "", "", "", 2});
                  })
                  .ok());
  Result<std::vector<RunMetrics>> m = ReadRunMetrics(*store, 10);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->size(), 2u);
  for (const RunMetrics& r : *m) {
    if (r.run.id == run.id) {
      EXPECT_EQ(r.eval_step, 200);
      EXPECT_EQ(r.eval_loss, 0.25);
    } else {
      EXPECT_EQ(r.run.id, none.id);
      EXPECT_FALSE(r.eval_step.has_value());
      EXPECT_FALSE(r.eval_loss.has_value());
    }
  }
}

TEST(StoreEvals, TheSweepViewHasEachMembersBestEvalLoss) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const RunRecord a = MakeRunWithJob(*store, tmp / "a", "a", 10, "7_0");
  const RunRecord b = MakeRunWithJob(*store, tmp / "b", "b", 10, "7_1");
  SweepRecord sweep;
  sweep.name = "lr";
  sweep.keys = R"(["optim.lr"])";
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    BATON_ASSIGN_OR_RETURN(sweep.id, CreateSweepInTx(*store, sweep));
                    BATON_RETURN_IF_ERROR(
                        AddSweepMemberInTx(*store, {sweep.id, 0, a.id, R"({"optim.lr": 1})"}));
                    BATON_RETURN_IF_ERROR(
                        AddSweepMemberInTx(*store, {sweep.id, 1, b.id, R"({"optim.lr": 2})"}));
                    for (const auto& [step, loss] :
                         {std::pair{2, 0.5}, std::pair{4, 0.25}, std::pair{6, 0.375}}) {
                      BATON_RETURN_IF_ERROR(UpsertEvalInTx(
                          *store, {a.id, step, loss, 0, 0, "job", 1, 1, 1, "", "", "", "", 1}));
                    }
                    return Status::Ok();
                  })
                  .ok());
  Result<SweepView> view = BuildSweepView(*store, sweep);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_EQ(view->members.size(), 2u);
  EXPECT_EQ(view->members[0].best_eval_loss, 0.25);
  EXPECT_EQ(view->members[0].best_eval_step, 4);
  EXPECT_FALSE(view->members[1].best_eval_loss.has_value());
  const json j = SweepViewJson(*view);
  EXPECT_EQ(j["members"][0]["best_eval_loss"], 0.25);
  EXPECT_EQ(j["members"][0]["best_eval_step"], 4);
  EXPECT_TRUE(j["members"][1]["best_eval_loss"].is_null());
  EXPECT_TRUE(j["members"][1]["best_eval_step"].is_null());
}

TEST(IngestEvals, EvalLinesOfAnEventsFileBecomeRowsTheLaterOneWinning) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const RunRecord run = MakeRunWithJob(*store, tmp / "run", "r", 10, "7");
  std::string text = StartLine("fresh", 0) + StepLine(0) + StepLine(1);
  text += EventLine(EvalJson(2, 0.875, 0.625, 0.25, "inline"));
  text += EventLine(EvalJson(4, nullptr, 0.5, 0.125, "inline"));  // a NaN loss
  text += EventLine(EvalJson(2, 0.75, 0.5, 0.25, "inline"));      // step 2 again, later
  json no_step = EvalJson(6, 0.5, 0.25, 0.25, "inline");
  no_step.erase("step");
  text += EventLine(no_step);
  Append(RunFolder{run.run_dir}.EventsFile("7", 0), text);
  Result<IngestStats> stats = IngestRun(*store, run);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->bad_lines, 1);
  EXPECT_TRUE(Mentions(stats->warnings, "eval without \"step\"")) << stats->warnings.size();
  const std::vector<EvalRecord> rows = Evals(*store, run.id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].step, 2);
  EXPECT_EQ(rows[0].loss, 0.75);
  EXPECT_EQ(rows[0].loss_video, 0.5);
  EXPECT_EQ(rows[0].source, "event");
  EXPECT_EQ(rows[0].mode, "inline");
  EXPECT_EQ(rows[0].episodes, 4);
  EXPECT_EQ(rows[0].valid_frames, 120);
  EXPECT_EQ(rows[0].seconds, 1.25);
  EXPECT_EQ(rows[0].config_hash, "cfg123");
  EXPECT_EQ(rows[0].job_id, "7");
  EXPECT_EQ(rows[0].checkpoint, "/runs/r/checkpoints/step_2");
  EXPECT_EQ(rows[1].step, 4);
  EXPECT_TRUE(std::isnan(rows[1].loss));
  EXPECT_EQ(rows[1].loss_action, 0.125);
}

// An inline eval's `seconds` are its attempt's eval time, summed once per line (a later eval of
// the same step replaces the row, not the time it took), and the run's `eval` bucket holds them.
TEST(IngestEvals, InlineEvalSecondsAreTheAttemptsEvalTime) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const RunRecord run = MakeRunWithJob(*store, tmp / "run", "r", 10, "7");
  auto line = [](json rec, const char* type, double time) {
    rec["type"] = type;
    rec["time"] = time;
    rec["source"] = "trainer";
    return rec.dump() + "\n";
  };
  auto step = [&](int64_t k, double time) {
    return line(json{{"step", k}, {"lr", 0.001}, {"loss", 1.0}, {"step_time_s", 1.0}}, "step",
                time);
  };
  std::string text = StartLine("fresh", 0) + step(0, 2) + step(1, 3);
  text += line(EvalJson(2, 0.875, 0.625, 0.25, "inline"), "eval", 4.25);  // 3 → 4.25
  text += step(2, 5.25) + step(3, 6.25);
  text += line(EvalJson(2, 0.75, 0.5, 0.25, "inline"), "eval", 7.5);  // step 2 again: 6.25 → 7.5
  Append(RunFolder{run.run_dir}.EventsFile("7", 0), text);
  ASSERT_TRUE(IngestRun(*store, run).ok());
  const std::vector<AttemptRecord> attempts = store->ListAttempts(run.id).value();
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].eval_s, 2.5);
  EXPECT_EQ(attempts[0].evals, 2);
  EXPECT_EQ(attempts[0].first_eval_start, 3.0);
  EXPECT_EQ(attempts[0].last_eval_end, 7.5);
  EXPECT_EQ(Evals(*store, run.id).size(), 1u);

  // Read again from the same cursor: nothing is added twice.
  ASSERT_TRUE(IngestRun(*store, run).ok());
  EXPECT_EQ(store->ListAttempts(run.id).value()[0].eval_s, 2.5);

  const RunRecord fresh = store->GetRun(run.id).value();
  ASSERT_TRUE(RefreshTimeBuckets(*store, fresh, /*now=*/7.5).ok());
  const std::optional<RunTimeBuckets> t = ReadTimeBuckets(*store, run.id).value();
  ASSERT_TRUE(t);
  EXPECT_NEAR(t->run[TimeBucket::kEval], 2.5, 1e-12);
  EXPECT_NEAR(t->run[TimeBucket::kProductive], 4, 1e-12);
  EXPECT_NEAR(t->run.Sum(), t->run.wall_s, 1e-9);
}

TEST(IngestEvalFiles, TheSyncPassStoresJobModeFilesAndNamesABadOne) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const RunRecord run = MakeRunWithJob(*store, tmp / "run", "r", 10, "7");
  WriteEvalFile(run, EvalJson(100, 0.5, 0.375, 0.125, "job"));
  WriteEvalFile(run, EvalJson(200, 0.25, 0.125, 0.125, "job"));
  WriteEvalFile(run, "step_300.json", "{\"step\": 300, \"metrics\": ");           // cut short
  WriteEvalFile(run, "step_400.json", EvalJson(5, 0.1, 0.1, 0.1, "job").dump());  // wrong step
  Result<SyncReport> pass = SyncRuns(*store, {run}, SyncOptions{}, 50);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(pass->ingested.records, 2);
  EXPECT_TRUE(Mentions(pass->ingested.warnings, "evals/step_300.json"));
  EXPECT_TRUE(Mentions(pass->ingested.warnings, "evals/step_400.json"));
  std::vector<EvalRecord> rows = Evals(*store, run.id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].step, 100);
  EXPECT_EQ(rows[0].loss, 0.5);
  EXPECT_EQ(rows[0].source, "file");
  EXPECT_EQ(rows[1].step, 200);
  EXPECT_EQ(rows[1].loss_video, 0.125);
  const double first_arrival = rows[1].arrived_at;

  // An unchanged folder writes nothing; a rewritten file (an eval job run again) replaces.
  Result<IngestStats> same = IngestEvalFiles(*store, run);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->records, 0);
  EXPECT_EQ(Evals(*store, run.id)[1].arrived_at, first_arrival);
  WriteEvalFile(run, EvalJson(200, 0.1875, 0.125, 0.0625, "job"));
  WriteEvalFile(run, EvalJson(300, 0.3, 0.2, 0.1, "job"));  // the cut file, complete now
  pass = SyncRuns(*store, {run}, SyncOptions{}, 60);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(pass->ingested.records, 2);
  rows = Evals(*store, run.id);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].loss, 0.1875);
  EXPECT_EQ(rows[2].step, 300);
}

TEST(IngestEvalFiles, AnInlineEventAndItsFileAreOneRow) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const RunRecord run = MakeRunWithJob(*store, tmp / "run", "r", 10, "7");
  const json result = EvalJson(8, 0.4375, 0.3125, 0.125, "inline");
  Append(RunFolder{run.run_dir}.EventsFile("7", 0), StartLine("fresh", 0) + EventLine(result));
  WriteEvalFile(run, result);
  Result<SyncReport> pass = SyncRuns(*store, {run}, SyncOptions{}, 50);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_TRUE(pass->ingested.warnings.empty());
  const std::vector<EvalRecord> rows = Evals(*store, run.id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].step, 8);
  EXPECT_EQ(rows[0].loss, 0.4375);
  EXPECT_EQ(rows[0].source, "event");  // the file said the same: not stored again
}

TEST(IngestEvalFiles, WatchReadsTheResultsOfARunThatEndedLately) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const double now = 1.7e9;
  const RunRecord live = MakeRunWithJob(*store, tmp / "live", "live", 10, "7");
  const RunRecord lately = MakeRunWithJob(*store, tmp / "lately", "lately", 10, "8");
  const RunRecord long_ago = MakeRunWithJob(*store, tmp / "long_ago", "long_ago", 10, "9");
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    BATON_RETURN_IF_ERROR(
                        store->SetRunStatusInTx(lately.id, RunStatus::kCompleted, "", now - 3600));
                    return store->SetRunStatusInTx(long_ago.id, RunStatus::kCompleted, "",
                                                   now - kEvalFollowUpS - 60);
                  })
                  .ok());
  // The last checkpoint's eval job finished after its run did.
  for (const RunRecord& run : {live, lately, long_ago}) {
    WriteEvalFile(run, EvalJson(10, 0.5, 0.25, 0.25, "job"));
  }
  SyncOptions watch;
  watch.follow_up_ended_runs = true;
  Result<SyncReport> pass = SyncRuns(*store, {live}, watch, now);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(pass->ingested.records, 2);
  EXPECT_EQ(Evals(*store, live.id).size(), 1u);
  EXPECT_EQ(Evals(*store, lately.id).size(), 1u);
  EXPECT_TRUE(Evals(*store, long_ago.id).empty());
  // A query command reads only the runs it shows.
  pass = SyncRuns(*store, {long_ago}, SyncOptions{}, now);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(Evals(*store, long_ago.id).size(), 1u);
}

TEST(IngestEvalFiles, ARunWithoutAFolderOrEvalsHasNothingToDo) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRunWithJob(*store, tmp / "missing", "r", 10, "7");
  Result<IngestStats> none = IngestEvalFiles(*store, run);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->records, 0);
  EXPECT_TRUE(none->warnings.empty());
  run.run_dir.clear();
  ASSERT_TRUE(IngestEvalFiles(*store, run).ok());
}

}  // namespace
}  // namespace baton
