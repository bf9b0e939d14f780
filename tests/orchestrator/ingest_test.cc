// Ingest: idempotent by byte cursor, torn last lines, bad and overlong lines, crash
// mid-ingest, superseded steps, checkpoints and failures (ingest_trainer_records_test.cc: what
// the trainer's own records leave in the store).
#include "orchestrator/ingest/event_ingester.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "schema/run_folder.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::EndLine;
using test::MakeRun;
using test::OpenStore;
using test::StartLine;
using test::StepLine;
using test::TempDir;

// Everything ingest writes, as text, for before/after comparisons.
std::string Dump(Store& store, int64_t run_id) {
  std::string out;
  // Copies, not references into the temporary Result (Result::value()&& returns T&&).
  const std::vector<AttemptRecord> attempts = store.ListAttempts(run_id).value();
  const std::vector<StepRecord> steps =
      store.ListSteps(run_id, {0, INT64_MAX, true, 1 << 20, 0}).value();
  const std::vector<CheckpointRecord> checkpoints = store.ListCheckpoints(run_id).value();
  for (const AttemptRecord& a : attempts) {
    out += "attempt " + a.job_id + "." + std::to_string(a.restart_count) + " " + a.resume_mode +
           " " + std::to_string(a.step0.value_or(-1)) + " " +
           std::to_string(a.last_step.value_or(-1)) + " " + a.action + " " + a.end_reason + "\n";
  }
  // An attempt by its place in the run, not its id: PostgreSQL's ids skip the values of rolled
  // back (crashed) transactions, SQLite's do not.
  auto place = [&attempts](int64_t id) {
    for (size_t i = 0; i < attempts.size(); ++i) {
      if (attempts[i].id == id) return static_cast<int64_t>(i);
    }
    return int64_t{-1};
  };
  for (const StepRecord& s : steps) {
    out += "step " + std::to_string(place(s.attempt_id)) + " " + std::to_string(s.step) + " " +
           std::to_string(s.loss) + " " + std::to_string(s.superseded) + "\n";
  }
  for (const CheckpointRecord& c : checkpoints) {
    out += "ckpt " + std::to_string(c.step) + " " + c.path + "\n";
  }
  out += "status " + std::string(Name(store.GetRun(run_id).value().status)) + "\n";
  return out;
}

TEST(Ingest, ParsesEventsFileNames) {
  std::string job;
  int64_t restart = -1;
  EXPECT_TRUE(ParseEventsFileName("123.4.jsonl", &job, &restart));
  EXPECT_EQ(job, "123");
  EXPECT_EQ(restart, 4);
  EXPECT_TRUE(ParseEventsFileName("local-99.0.jsonl", &job, &restart));
  EXPECT_FALSE(ParseEventsFileName("123.jsonl", &job, &restart));
  EXPECT_FALSE(ParseEventsFileName("123.x.jsonl", &job, &restart));
  EXPECT_FALSE(ParseEventsFileName("123.1.json", &job, &restart));
}

TEST(Ingest, ListsFilesInAttemptOrder) {
  TempDir tmp;
  for (const char* f :
       {"10.0.jsonl", "9.1.jsonl", "9.0.jsonl", "9.10.jsonl", "9.2.jsonl", "x.txt"}) {
    Append(RunFolder{tmp.path()}.EventsDir() + "/" + f, "");
  }
  std::vector<std::string> files = RunFolder{tmp.path()}.ListEventFiles();
  ASSERT_EQ(files.size(), 5u);
  EXPECT_NE(files[0].find("9.0.jsonl"), std::string::npos);
  EXPECT_NE(files[1].find("9.1.jsonl"), std::string::npos);
  EXPECT_NE(files[2].find("9.2.jsonl"), std::string::npos);
  EXPECT_NE(files[3].find("9.10.jsonl"), std::string::npos);
  EXPECT_NE(files[4].find("10.0.jsonl"), std::string::npos);
}

TEST(Ingest, IsIdempotent) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  std::string text = StartLine("fresh", 0);
  for (int s = 1; s <= 5; ++s) text += StepLine(s);
  text += EndLine("done", "completed", 0);
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0), text);
  IngestStats first = IngestRun(*store, run).value();
  EXPECT_EQ(first.records, 7);
  EXPECT_EQ(first.steps, 5);
  const std::string before = Dump(*store, run.id);
  IngestStats second = IngestRun(*store, run).value();
  EXPECT_EQ(second.records, 0);
  EXPECT_EQ(Dump(*store, run.id), before);
  EXPECT_EQ(store->GetRun(run.id).value().status, RunStatus::kCompleted);
}

TEST(Ingest, LeavesATornLastLineForTheNextPass) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  const std::string path = RunFolder{tmp / "run"}.EventsFile("7", 0);
  const std::string line = StepLine(2);
  Append(path, StartLine("fresh", 0) + StepLine(1) + line.substr(0, 20));  // torn mid-line
  EXPECT_EQ(IngestRun(*store, run).value().steps, 1);
  EXPECT_EQ(store->CountSteps(run.id, true).value(), 1);
  Append(path, line.substr(20));  // the writer finishes the line
  IngestStats s = IngestRun(*store, run).value();
  EXPECT_EQ(s.steps, 1);
  EXPECT_EQ(s.bad_lines, 0);
  EXPECT_EQ(store->CountSteps(run.id, true).value(), 2);
}

TEST(Ingest, SkipsAndCountsBadLinesWithoutBlocking) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0), StartLine("fresh", 0) + "not json\n" +
                                                        "{\"type\":\"step\"}\n" +
                                                        "{\"no\":\"type\"}\n" + StepLine(1));
  IngestStats s = IngestRun(*store, run).value();
  EXPECT_EQ(s.bad_lines, 3);
  EXPECT_EQ(s.steps, 1);
  EXPECT_EQ(s.warnings.size(), 3u);
  EXPECT_EQ(IngestRun(*store, run).value().bad_lines, 0);  // not retried
}

// A time no clock gives (negative, 1e308, past the year 2100) makes the record a bad line, named
// by its value; a missing or null time is still "now", and a plausible one is kept.
TEST(Ingest, RefusesImplausibleEventTimes) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  auto step_at = [](int64_t step, const std::string& time) {
    return "{\"type\":\"step\",\"time\":" + time +
           ",\"source\":\"trainer\",\"step\":" + std::to_string(step) + ",\"loss\":1}\n";
  };
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0),
         StartLine("fresh", 0) + step_at(0, "1e308") + step_at(1, "-5") + step_at(2, "4102444801") +
             step_at(3, "\"soon\"") + step_at(4, "1710000000.5") + step_at(5, "null"));
  IngestStats s = IngestRun(*store, run).value();
  EXPECT_EQ(s.bad_lines, 4);
  EXPECT_EQ(s.steps, 2);
  ASSERT_EQ(s.warnings.size(), 4u);
  EXPECT_NE(s.warnings[0].find("\"time\" 1e+308 is not a plausible Unix time"), std::string::npos)
      << s.warnings[0];
  EXPECT_NE(s.warnings[1].find("\"time\" -5 is not a plausible"), std::string::npos)
      << s.warnings[1];
  const std::vector<StepRecord> steps =
      store->ListSteps(run.id, {0, INT64_MAX, true, 100, 0}).value();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].step, 4);
  EXPECT_DOUBLE_EQ(steps[0].time, 1710000000.5);
  EXPECT_EQ(steps[1].step, 5);
  EXPECT_GT(steps[1].time, 1.7e9);  // null: the time of ingest
}

// A line longer than a chunk is skipped with a warning, found without reading it whole; the
// records around it are applied. A valid record padded that long is skipped all the same (no
// event record is that long), and a long line still being written waits for its end.
TEST(Ingest, SkipsALineLongerThanAChunk) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  const std::string path = RunFolder{tmp / "run"}.EventsFile("7", 0);
  const std::string step = StepLine(2);
  const std::string padded =
      step.substr(0, step.size() - 2) + ",\"pad\":\"" + std::string(300000, 'x') + "\"}\n";
  IngestOptions small;
  small.chunk_bytes = 4096;
  Append(path, StartLine("fresh", 0) + StepLine(1) + padded.substr(0, 100000));  // torn
  IngestStats first = IngestRun(*store, run, small).value();
  EXPECT_EQ(first.steps, 1);
  EXPECT_EQ(first.bad_lines, 0);
  Append(path, padded.substr(100000) + StepLine(3));
  IngestStats s = IngestRun(*store, run, small).value();
  EXPECT_EQ(s.bad_lines, 1);
  EXPECT_EQ(s.steps, 1);  // step 3; the padded step 2 is not applied
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("longer than 4096"), std::string::npos) << s.warnings[0];
  const std::vector<StepRecord> rows = store->ListSteps(run.id).value();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].step, 1);
  EXPECT_EQ(rows[1].step, 3);
  EXPECT_EQ(IngestRun(*store, run, small).value().bad_lines, 0);  // not retried
}

TEST(Ingest, SmallChunksGiveTheSameRows) {
  TempDir tmp;
  std::string text = StartLine("fresh", 0);
  for (int s = 1; s <= 200; ++s) text += StepLine(s, s * 0.5);
  text += EndLine("requeue", "preempted", 75);
  auto a = OpenStore(tmp / "a.db");
  auto b = OpenStore(tmp / "b.db");
  RunRecord ra = MakeRun(*a, tmp / "run");
  RunRecord rb = MakeRun(*b, tmp / "run");
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0), text);
  ASSERT_TRUE(IngestRun(*a, ra).ok());
  IngestOptions small;
  small.chunk_bytes = 4096;  // many transactions
  ASSERT_TRUE(IngestRun(*b, rb, small).ok());
  EXPECT_EQ(Dump(*a, ra.id), Dump(*b, rb.id));
  EXPECT_EQ(a->GetRun(ra.id).value().status, RunStatus::kRequeued);
}

// A process killed between writing rows and committing the cursor: the rows vanish with the
// transaction, and the next pass writes each exactly once.
TEST(Ingest, ACrashMidIngestDuplicatesNothing) {
  TempDir tmp;
  std::string text = StartLine("fresh", 0);
  for (int s = 1; s <= 300; ++s) text += StepLine(s);
  text += EndLine("done", "completed", 0);
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0), text);
  int64_t run_id = 0;
  {
    auto store = OpenStore(tmp / "baton.db");
    run_id = MakeRun(*store, tmp / "run").id;
  }
  for (int crash_after : {1, 57, 150}) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto store = Store::Open(test::TestStore(tmp / "baton.db"));
      if (!store.ok()) ::_exit(3);
      RunRecord run = (*store)->GetRun(run_id).value();
      IngestOptions o;
      o.chunk_bytes = 8192;  // several chunks: earlier ones commit, the crashing one does not
      o.after_record = [crash_after](int64_t n) {
        if (n == crash_after) ::_exit(9);
      };
      (void)IngestRun(**store, run, o);
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
  }
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = store->GetRun(run_id).value();
  ASSERT_TRUE(IngestRun(*store, run).ok());
  EXPECT_EQ(store->CountSteps(run_id, true).value(), 300);
  EXPECT_EQ(store->ListAttempts(run_id).value().size(), 1u);
  EXPECT_EQ(store->GetRun(run_id).value().status, RunStatus::kCompleted);

  // Same rows as a clean ingest into a fresh database.
  auto clean = OpenStore(tmp / "clean.db");
  RunRecord crun = MakeRun(*clean, tmp / "run");
  ASSERT_TRUE(IngestRun(*clean, crun).ok());
  EXPECT_EQ(Dump(*store, run_id), Dump(*clean, crun.id));
}

TEST(Ingest, ResumedStepsSupersedeTheEarlierAttempt) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run", "r", 8);
  std::string first = StartLine("fresh", 0);
  for (int s = 1; s <= 6; ++s) first += StepLine(s, 1.0);
  first += EndLine("requeue", "crashed", 1);  // crashed after 6, last checkpoint at 4
  std::string second = StartLine("exact", 4);
  for (int s = 5; s <= 8; ++s) second += StepLine(s, 2.0);
  second += EndLine("done", "completed", 0);
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0), first);
  Append(RunFolder{tmp / "run"}.EventsFile("7", 1), second);
  ASSERT_TRUE(IngestRun(*store, run).ok());
  std::vector<StepRecord> all = store->ListSteps(run.id, {0, INT64_MAX, true, 100, 0}).value();
  EXPECT_EQ(all.size(), 10u);
  int superseded = 0;
  for (const StepRecord& s : all) {
    if (s.superseded) {
      ++superseded;
      EXPECT_TRUE(s.step == 5 || s.step == 6);
      EXPECT_DOUBLE_EQ(s.loss, 1.0);
    }
  }
  EXPECT_EQ(superseded, 2);
  std::vector<StepRecord> effective = store->ListSteps(run.id).value();
  ASSERT_EQ(effective.size(), 8u);
  EXPECT_DOUBLE_EQ(effective[4].loss, 2.0);  // step 5 from the resumed attempt
  std::vector<AttemptRecord> attempts = store->ListAttempts(run.id).value();
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].end_reason, "crashed");
  EXPECT_EQ(attempts[1].resume_mode, "exact");
  EXPECT_EQ(attempts[1].step0, 4);
  EXPECT_EQ(attempts[1].last_step, 9);  // steps finished: rows up to index 8
  EXPECT_EQ(store->GetRun(run.id).value().status, RunStatus::kCompleted);
}

// The attempt table says where the weights came from: segment_start's init_from; events
// written before the field existed (no key) leave it ''.
TEST(Ingest, RecordsTheUpstreamFolderTheWeightsCameFrom) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run", "r", 8);
  auto segment = [](const std::string& init) {
    return std::string("{\"type\":\"segment_start\",\"time\":1.5,\"source\":\"trainer\",") +
           "\"mode\":\"fresh\",\"step0\":0,\"target_steps\":8" +
           (init.empty() ? "" : ",\"init_from\":\"" + init + "\"") + "}\n";
  };
  Append(RunFolder{tmp / "run"}.EventsFile("7", 0),
         StartLine("fresh", 0) + segment("/models/base/transformer") + StepLine(1, 1.0) +
             EndLine("requeue", "preempted", 75));
  Append(RunFolder{tmp / "run"}.EventsFile("7", 1),
         StartLine("exact", 1) + segment("") + StepLine(2, 1.0));
  ASSERT_TRUE(IngestRun(*store, run).ok());
  std::vector<AttemptRecord> attempts = store->ListAttempts(run.id).value();
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].init_from, "/models/base/transformer");
  EXPECT_EQ(attempts[1].init_from, "");
}

TEST(Ingest, RecordsCheckpointsAndFailures) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  RunRecord run = MakeRun(*store, tmp / "run");
  Append(
      RunFolder{tmp / "run"}.EventsFile("7", 0),
      StartLine("fresh", 0) + StepLine(1) +
          "{\"type\":\"checkpoint\",\"time\":1,\"source\":\"trainer\",\"step\":1,\"path\":\"/c/1\","
          "\"bytes\":10,\"seconds\":0.5,\"reason\":\"periodic\"}\n" +
          EndLine("fail", "config_error", 78));
  ASSERT_TRUE(IngestRun(*store, run).ok());
  std::vector<CheckpointRecord> c = store->ListCheckpoints(run.id).value();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].path, "/c/1");
  RunRecord r = store->GetRun(run.id).value();
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_NE(r.reason.find("config_error"), std::string::npos);
}

}  // namespace
}  // namespace baton
