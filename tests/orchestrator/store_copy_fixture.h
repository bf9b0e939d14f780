// The history the store-copy tests copy (store_copy_test.cc): a row in every table of the schema,
// made through the store's own writes, and a dump of every table row by row to compare two
// stores with. Test-only; single-threaded.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "orchestrator/store/store.h"
#include "orchestrator/store/store_alerts.h"
#include "orchestrator/store/store_audit.h"
#include "orchestrator/store/store_copy_plan.h"
#include "orchestrator/store/store_copy_rows.h"
#include "orchestrator/store/store_evals.h"
#include "orchestrator/store/store_internal.h"
#include "orchestrator/store/store_nodes.h"
#include "orchestrator/store/store_sweeps.h"
#include "orchestrator/store/store_tokens.h"
#include "orchestrator/store/time_bucket_store.h"
#include "schema/run_folder.h"

namespace baton::test {

// A store by its spec as it stands (TestStore would give a path a database of its own).
inline std::unique_ptr<Store> OpenSpec(const std::string& spec) {
  Result<std::unique_ptr<Store>> s = Store::Open(spec);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

inline bool SameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// One run of `owner` in `dir` with two attempts: the second resumed at step 4 and re-did
// steps 5..6 (superseded rows), step 8 skipped as non-finite; micro-steps, checkpoints (one whose
// attempt is unknown), a cursor, a budget, the audit, an incident with a pending and a sent
// delivery, and the node it happened on.
inline int64_t AddRun(Store& s, const std::string& dir, const std::string& owner, double t0) {
  int64_t run = 0;
  EXPECT_TRUE(
      s.Write([&]() -> Status {
         NewRun n;
         n.name = "r-" + owner;
         n.config = "run: {name: r}\n";
         n.run_dir = dir;
         n.target_steps = 10;
         n.max_restarts = 5;
         n.max_failures = 2;
         n.owner = owner;
         n.cluster = "north";
         n.partition = "gpu";
         BATON_ASSIGN_OR_RETURN(run, s.CreateRunInTx(n, t0));
         BATON_RETURN_IF_ERROR(s.SetRunJobInTx(run, "900", t0));
         int64_t attempts[2];
         for (int a = 0; a < 2; ++a) {
           BATON_ASSIGN_OR_RETURN(attempts[a], s.EnsureAttemptInTx(run, "900", a, 0, "north"));
           BATON_ASSIGN_OR_RETURN(AttemptRecord rec, s.GetAttempt(attempts[a]));
           rec.started_at = t0 + 10 + a * 100;
           rec.ended_at = t0 + 90 + a * 100;
           rec.nodes = "gpu-" + std::to_string(a);
           rec.step0 = a == 0 ? 0 : 4;
           rec.action = a == 0 ? "requeue" : "done";
           rec.end_reason = a == 0 ? "preempted" : "completed";
           rec.resume_mode = a == 0 ? "fresh" : "exact";
           rec.trainer_message = "bye \"quoted\" \xc3\xa9";
           BATON_RETURN_IF_ERROR(s.UpdateAttemptInTx(rec));
           for (int64_t step = rec.step0.value_or(0) + 1; step <= (a == 0 ? 6 : 10); ++step) {
             StepRecord st;
             st.run_id = run;
             st.attempt_id = attempts[a];
             st.step = step;
             st.time = t0 + 10 + a * 100 + static_cast<double>(step) * 0.1;
             st.lr = 1e-3 / 3.0 * static_cast<double>(step);
             st.loss = step == 8 ? kNoValue : 2.0 / static_cast<double>(step);
             st.nonfinite = step == 8;
             st.tokens = 100 * step;
             st.step_time_s = 0.1;
             BATON_RETURN_IF_ERROR(s.InsertStepInTx(st));
             BATON_RETURN_IF_ERROR(
                 s.InsertMicrostepInTx({run, attempts[a], step, 0, 50, 0.05, 1 << 20}));
           }
           BATON_RETURN_IF_ERROR(
               s.SetCursorInTx(RunFolder{dir}.EventsFile("900", a), run, 1234 + a, a, t0));
         }
         BATON_RETURN_IF_ERROR(s.UpsertCheckpointInTx(
             {run, 4, attempts[0], dir + "/ckpt/4", 4096, 1.5, "signal", true, t0 + 50}));
         BATON_RETURN_IF_ERROR(s.UpsertCheckpointInTx(
             {run, 2, std::nullopt, dir + "/ckpt/2", 4096, 1.5, "periodic", false, t0}));
         BATON_RETURN_IF_ERROR(UpsertEvalInTx(s, {run, 4, 0.5, 0.375, 0.125, "job", 3, 96, 2.5,
                                                  "cfg", "901", dir + "/ckpt/4", "file", t0 + 60}));
         BATON_RETURN_IF_ERROR(s.UpsertStopSaveBudgetInTx(
             {run, 30, "GraceTime 30 s", 1 << 30, 1.25, "probe", 0.8, true, t0}));
         BATON_RETURN_IF_ERROR(s.SetRunStatusInTx(run, RunStatus::kCompleted, "", t0 + 300));
         IncidentRecord inc;
         inc.run_id = run;
         inc.kind = "hang";
         inc.first_attempt_id = attempts[0];
         inc.last_attempt_id = attempts[1];
         inc.cause = "rank 1 stalled";
         BATON_ASSIGN_OR_RETURN(const IncidentUpsert up, RecordIncidentInTx(s, inc, t0));
         for (int seq = 1; seq <= 2; ++seq) {
           DeliveryRecord d;
           d.incident_id = up.incident.id;
           d.message_seq = seq;
           d.sink_name = "chat";
           d.sink_json = "{\"url\":\"env:HOOK\"}";
           d.idempotency_key = IdempotencyKey(up.incident.id, seq);
           d.body = "{}";
           d.next_try_at = t0;
           d.created_at = t0;
           BATON_RETURN_IF_ERROR(QueueDeliveryInTx(s, d));
         }
         BATON_ASSIGN_OR_RETURN(const int64_t node,
                                EnsureNodeInTx(s, {"north", "gpu", "gpu-0"}, t0));
         NodeIncidentRecord ni;
         ni.node_id = node;
         ni.run_id = run;
         ni.job_id = "900";
         ni.kind = "hang";
         ni.source = "launcher";
         ni.evidence = "rank 1 of " + owner;
         ni.at = t0;
         BATON_RETURN_IF_ERROR(AddNodeIncidentInTx(s, ni).status());
         BATON_RETURN_IF_ERROR(
             AppendNodeActionInTx(s, {0, node, owner, "exclude", t0, "by " + owner}));
         return SetNodeLogCursorInTx(s, dir + "/logs/900.out", 77);
       }).ok());
  // One delivery of each incident confirmed, the other left pending.
  Result<std::vector<IncidentRecord>> incidents = ListIncidents(s, run);
  EXPECT_TRUE(incidents.ok() && incidents->size() == 1u);
  Result<std::vector<DeliveryRecord>> deliveries = ListDeliveries(s, incidents->at(0).id);
  EXPECT_TRUE(deliveries.ok() && deliveries->size() == 2u);
  EXPECT_TRUE(MarkDeliverySent(s, deliveries->at(0).id, t0 + 1).ok());
  EXPECT_TRUE(AppendRunAction(s, {0, run, owner, "cancel", "web", t0, "ok", 200, "done"}).ok());
  EXPECT_TRUE(RefreshTimeBuckets(s, s.GetRun(run).value(), t0 + 400).ok());
  return run;
}

// A lab's history: alice's and bob's runs in one sweep, tokens, a write probe.
inline std::vector<int64_t> FillHistory(Store& s, const std::string& root, double t0) {
  std::vector<int64_t> runs = {AddRun(s, root + "/alice-1", "alice", t0),
                               AddRun(s, root + "/bob-1", "bob", t0 + 1000),
                               AddRun(s, root + "/alice-2", "alice", t0 + 2000)};
  EXPECT_TRUE(s.Write([&]() -> Status {
                 SweepRecord sw;
                 sw.name = "lr";
                 sw.spec_path = root + "/sweep.yaml";
                 sw.spec = "axes: {}";
                 sw.base_config = root + "/base.yaml";
                 sw.sweep_dir = root + "/sweep";
                 sw.max_parallel = 2;
                 sw.keys = "[\"optim.lr\"]";
                 sw.owner = "alice";
                 sw.created_at = t0;
                 BATON_ASSIGN_OR_RETURN(const int64_t id, CreateSweepInTx(s, sw));
                 for (int i = 0; i < 2; ++i) {
                   BATON_RETURN_IF_ERROR(AddSweepMemberInTx(
                       s, {id, i, runs[static_cast<size_t>(i)], "{\"optim.lr\": 0.1}"}));
                 }
                 return Status::Ok();
               }).ok());
  EXPECT_TRUE(AddApiToken(s, "alice", false, t0).ok());
  EXPECT_TRUE(AddApiToken(s, "boss", true, t0).ok());
  EXPECT_TRUE(s.PutWriteProbe({root + "/ckpt", 2.5, 1 << 26, t0}).ok());
  return runs;
}

// Every table of the plan, row by row in key order, each value written by its column's kind.
inline std::map<std::string, std::vector<std::string>> Dump(Store& store) {
  Db& db = StoreInternal::Db(store);
  std::map<std::string, std::vector<std::string>> out;
  for (const CopyTable& t : CopyPlan()) {
    Result<std::vector<CopyColumn>> cols = ListColumns(db, t.name);
    EXPECT_TRUE(cols.ok()) << cols.status().ToString();
    RowReader reader(db, t.name, *cols, t.order, "", std::nullopt);
    std::vector<CopyRow> page;
    auto& rows = out[t.name];
    while (true) {
      Result<bool> more = reader.Next(&page);
      EXPECT_TRUE(more.ok()) << more.status().ToString();
      if (!more.ok() || !*more) break;
      for (const CopyRow& r : page) {
        std::string line;
        for (size_t i = 0; i < r.size(); ++i) {
          char buf[40];
          std::snprintf(buf, sizeof buf, "%.17g", r[i].d);
          const ColumnKind k = (*cols)[i].kind;
          line += (*cols)[i].name + "=" +
                  (r[i].null                ? std::string("NULL")
                   : k == ColumnKind::kInt  ? std::to_string(r[i].i)
                   : k == ColumnKind::kReal ? std::string(buf)
                                            : "'" + r[i].s + "'") +
                  " ";
        }
        rows.push_back(line);
      }
    }
  }
  return out;
}

}  // namespace baton::test
