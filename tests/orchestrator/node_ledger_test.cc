// The node ledger over a real SQLite store: incidents from incident files and job logs (once
// each), nothing from a run's own faults, exclusions judged and audited, ExcNodeList set on a
// held job before its hold is released (fake SLURM), the cap's refusal recorded once, nodes
// SLURM no longer knows dropped, hand exclusions and re-admissions, and submit's --exclude.
#include "orchestrator/nodes/node_ledger.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "orchestrator/nodes/incident_file.h"
#include "orchestrator/nodes/manual_exclusion.h"
#include "orchestrator/reconcile/reconciler.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/store/store_nodes.h"
#include "schema/event_records.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::MakeRunWithJob;
using test::OpenStore;
using test::TempDir;

class NodeLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenStore(tmp_ / "baton.db");
    job_ = slurm_.Submit("/x/sbatch.sh").value();
    run_ = MakeRunWithJob(*store_, tmp_ / "run", "r", /*target=*/10, job_);
    // Two fake nodes: the cap must let one go (submit reads the file, the pass this copy).
    Append(tmp_ / "nodes.yaml", "max_excluded_fraction: 0.5\n");
    ::setenv("BATON_NODES_CONFIG", (tmp_ / "nodes.yaml").c_str(), 1);
    config_ = LoadNodeLedgerConfig(tmp_ / "nodes.yaml").value();
  }
  // An ended attempt `restart` of the job on `nodes`.
  void Attempt(int64_t restart, const std::string& nodes, const std::string& reason) {
    ASSERT_TRUE(store_
                    ->Write([&]() -> Status {
                      BATON_ASSIGN_OR_RETURN(const int64_t id,
                                             store_->EnsureAttemptInTx(run_.id, job_, restart));
                      BATON_ASSIGN_OR_RETURN(AttemptRecord a, store_->GetAttempt(id));
                      a.nodes = nodes;
                      a.ended_at = now_;
                      a.action = "requeue";
                      a.end_reason = reason;
                      return store_->UpdateAttemptInTx(a);
                    })
                    .ok());
  }
  void Log(const std::string& text) { Append(tmp_ / ("run/logs/" + job_ + ".out"), text); }
  std::vector<std::string> Pass() {
    std::vector<std::string> changes;
    Status st = RecordRunIncidents(*store_, run_, config_, now_, &changes);
    EXPECT_TRUE(st.ok()) << st.ToString();
    st = JudgeNodes(*store_, config_.policy, now_, &changes);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return changes;
  }
  std::vector<NodeIncidentRecord> Incidents(const std::string& host) {
    std::vector<NodeRecord> rows = FindNodesByHost(*store_, host).value();
    return rows.empty() ? std::vector<NodeIncidentRecord>{}
                        : ListNodeIncidents(*store_, rows[0].id).value();
  }
  NodeRecord Node(const std::string& host) { return FindNodesByHost(*store_, host).value().at(0); }
  void Hold(int64_t restarts, const std::string& num_nodes = "1") {
    slurm_.SetState(job_, "PENDING", "BeginTime");
    slurm_.job(job_)->restarts = restarts;
    slurm_.job(job_)->fields["NumNodes"] = num_nodes;
  }

  void TearDown() override { ::unsetenv("BATON_NODES_CONFIG"); }

  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  RunRecord run_;
  std::string job_;
  NodeLedgerConfig config_;
  double now_ = 1.0e9;
};

TEST_F(NodeLedgerTest, MigrationAddsTheLedger) {
  EXPECT_EQ(store_->SchemaVersion().value(), Store::LatestSchemaVersion());
  EXPECT_TRUE(ListNodes(*store_).value().empty());
}

TEST_F(NodeLedgerTest, TwoSignalsOnOneNodeExcludeItAndTheHeldJobGetsExcNodeList) {
  slurm_.partition_nodes = {"node-a", "node-b"};
  Attempt(0, "node-[a-b]", "crashed");
  Log("step 1\nsrun: error: node-b: task 1: Bus error\n");
  Pass();
  ASSERT_EQ(Incidents("node-b").size(), 1u);
  EXPECT_FALSE(ExcludedAt(Node("node-b"), now_));
  Pass();  // the same lines again: nothing new
  EXPECT_EQ(Incidents("node-b").size(), 1u);

  Attempt(1, "node-[a-b]", "crashed");
  Log("srun: error: node-b: task 1: Bus error\n");
  const std::vector<std::string> changes = Pass();
  const NodeIncidentRecord last = Incidents("node-b").at(0);
  EXPECT_EQ(last.kind, "signal");
  EXPECT_EQ(last.source, "log");
  EXPECT_EQ(last.restart_count, 1);
  EXPECT_EQ(last.run_id, run_.id);
  NodeRecord b = Node("node-b");
  ASSERT_TRUE(ExcludedAt(b, now_));
  EXPECT_EQ(*b.excluded_until, now_ + 24 * 3600);
  EXPECT_EQ(ListNodeActions(*store_, b.id).value().at(0).action, "exclude");
  EXPECT_TRUE(FindNodesByHost(*store_, "node-a").value().empty());

  // Reconcile sees the job held after the requeue: ExcNodeList first.
  Hold(2);
  ReconcileOptions options;
  options.node_policy = &config_.policy;
  std::vector<std::string> rc;
  ASSERT_TRUE(
      ReconcileRun(*store_, slurm_, store_->GetRun(run_.id).value(), now_, &rc, options).ok());
  EXPECT_EQ(slurm_.excluded, std::vector<std::string>{job_ + "=node-b"});
  EXPECT_EQ(slurm_.job(job_)->fields["ExcNodeList"], "node-b");
  // Already set: not again.
  ASSERT_TRUE(
      ReconcileRun(*store_, slurm_, store_->GetRun(run_.id).value(), now_, &rc, options).ok());
  EXPECT_EQ(slurm_.excluded.size(), 1u);
}

TEST_F(NodeLedgerTest, RunsOwnFaultsAreNeverHeldAgainstANode) {
  for (const char* reason : {"config_error", "data_error", "diverged"}) {
    Attempt(0, "node-a", reason);
    Log("OSError: [Errno 5] Input/output error\n");
    NodeIncidentReport r{job_, 0, 0, 0, "node-a", "hang", "launcher", "x", now_};
    ASSERT_TRUE(WriteNodeIncident(run_.run_dir, r).ok());
    Pass();
    EXPECT_TRUE(Incidents("node-a").empty()) << reason;
  }
}

TEST_F(NodeLedgerTest, ALineWithoutAHostCountsOnlyOnAOneNodeAttempt) {
  Attempt(0, "node-[a-b]", "crashed");
  Log("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus\n");
  Pass();
  EXPECT_TRUE(ListNodes(*store_).value().empty());
  Attempt(1, "node-a", "crashed");
  Log("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus\n");
  Pass();
  ASSERT_EQ(Incidents("node-a").size(), 1u);
  EXPECT_EQ(Incidents("node-a")[0].kind, "xid");
}

TEST_F(NodeLedgerTest, IncidentFilesAreRecordedOnceAndBadOnesRefused) {
  Attempt(0, "node-[a-b]", "hang");
  NodeIncidentReport r{job_, 0, 0, 1, "node-a", "hang", "launcher", "rank 1 stale", now_};
  ASSERT_TRUE(WriteNodeIncident(run_.run_dir, r).ok());
  r.host = "bad;host";
  EXPECT_EQ(WriteNodeIncident(run_.run_dir, r).code(), Code::kInvalidArgument);
  Append(tmp_ / "run/nodes/incident-x.json", "{\"host\":\"a/b\"}");
  std::vector<std::string> changes = Pass();
  Pass();
  ASSERT_EQ(Incidents("node-a").size(), 1u);
  EXPECT_EQ(Incidents("node-a")[0].rank, 1);
  bool refused = false;
  for (const std::string& c : changes)
    refused |= c.find("refused as evidence") != std::string::npos;
  EXPECT_TRUE(refused);
  EXPECT_EQ(ListNodes(*store_).value().size(), 1u);  // nothing for the bad file's host
  EXPECT_FALSE(ExcludedAt(Node("node-a"), now_));    // a hang is one incident; it takes two
}

TEST_F(NodeLedgerTest, CapRefusalIsRecordedOnceAndTheJobKeepsBothNodes) {
  for (int i = 0; i < 2; ++i) {
    Attempt(i, "node-[a-b]", "crashed");
    Log("srun: error: node-b: task 1: Segmentation fault\n");
    Pass();
  }
  ASSERT_TRUE(ExcludedAt(Node("node-b"), now_));
  Hold(2, "2");  // a 2-node job: excluding node-b would not fit
  ReconcileOptions options;
  options.node_policy = &config_.policy;
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> rc;
    ASSERT_TRUE(ReconcileRun(*store_, slurm_, run_, now_, &rc, options).ok());
  }
  EXPECT_TRUE(slurm_.excluded.empty());
  int refusals = 0;
  for (const NodeActionRecord& a : ListNodeActions(*store_, Node("node-b").id).value()) {
    if (a.action == "refuse") {
      ++refusals;
      EXPECT_NE(a.message.find("cannot exclude: job would not fit"), std::string::npos);
    }
  }
  EXPECT_EQ(refusals, 1);
}

TEST_F(NodeLedgerTest, ANodeSlurmForgotIsDroppedAndNeverBlocks) {
  ManualNodeAction a;
  a.host = "node-gone";
  a.user = "admin";
  a.for_s = 3600;
  ASSERT_TRUE(ExcludeNodeByHand(*store_, a, now_).ok());
  Hold(1);
  ReconcileOptions options;
  options.node_policy = &config_.policy;
  std::vector<std::string> rc;
  ASSERT_TRUE(ReconcileRun(*store_, slurm_, run_, now_, &rc, options).ok());
  EXPECT_TRUE(slurm_.excluded.empty());
  EXPECT_FALSE(ExcludedAt(Node("node-gone"), now_));
  EXPECT_EQ(ListNodeActions(*store_, Node("node-gone").id).value().at(0).action, "drop");
}

TEST_F(NodeLedgerTest, HandExclusionReadmissionAndExpiry) {
  ManualNodeAction a;
  a.host = "node-a";
  a.user = "admin";
  a.for_s = 6 * 3600;
  a.reason = "fan noise";
  ASSERT_TRUE(ExcludeNodeByHand(*store_, a, now_).ok());
  NodeRecord n = Node("node-a");
  EXPECT_TRUE(ExcludedAt(n, now_));
  EXPECT_EQ(n.excluded_by, "admin");
  EXPECT_EQ(ExcludeForNewJob(store_.get(), slurm_, "", "", 1, now_, nullptr).value(), "node-a");
  // After its 6 h the pass re-admits it on probation.
  now_ += 6 * 3600;
  Pass();
  n = Node("node-a");
  EXPECT_FALSE(ExcludedAt(n, now_));
  ASSERT_TRUE(n.probation_until.has_value());
  EXPECT_EQ(ListNodeActions(*store_, n.id).value().at(0).action, "expire");
  std::vector<std::string> warnings;
  EXPECT_EQ(ExcludeForNewJob(store_.get(), slurm_, "", "", 1, now_, &warnings).value(), "");
  // By hand again, then readmitted by hand: audited, on probation.
  ASSERT_TRUE(ExcludeNodeByHand(*store_, a, now_).ok());
  ASSERT_TRUE(ReadmitNode(*store_, a, config_.policy, now_ + 1).ok());
  n = Node("node-a");
  EXPECT_FALSE(ExcludedAt(n, now_ + 1));
  const std::vector<NodeActionRecord> actions = ListNodeActions(*store_, n.id).value();
  EXPECT_EQ(actions.at(0).action, "readmit");
  EXPECT_EQ(actions.at(0).user, "admin");
  a.host = "no-such-node";
  EXPECT_EQ(ReadmitNode(*store_, a, config_.policy, now_).status().code(), Code::kNotFound);
  a.host = "bad/name";
  EXPECT_EQ(ExcludeNodeByHand(*store_, a, now_).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace baton
