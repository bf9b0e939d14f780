// The exclusion cap's refusal as an alert: a node excluded after two incidents, a held 2-node job
// it would not fit, and the `cannot_exclude` incident reaching a subscribed email sink (a
// sendmail script that keeps the mail) through the outbox, once; an unsubscribed lab hears
// nothing, and the kind is one a subscription may name.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "orchestrator/alerts/alert_pass.h"
#include "orchestrator/alerts/node_refusal_alert.h"
#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/reconcile/reconciler.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/store/store_alerts.h"
#include "orchestrator/store/store_nodes.h"
#include "schema/alerts_config.h"
#include "schema/clock.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::MakeRunWithJob;
using test::OpenStore;
using test::TempDir;

class NodeAlertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenStore(tmp_ / "baton.db");
    job_ = slurm_.Submit("/x/sbatch.sh").value();
    run_ = MakeRunWithJob(*store_, tmp_ / "run", "r", /*target=*/10, job_);
    slurm_.partition_nodes = {"node-a", "node-b"};
    Append(tmp_ / "nodes.yaml", "max_excluded_fraction: 0.5\n");
    config_ = LoadNodeLedgerConfig(tmp_ / "nodes.yaml").value();
    // The sink: a sendmail that appends each mail it is piped to a file.
    const std::string sendmail = tmp_ / "sendmail";
    std::ofstream(sendmail) << "#!/bin/sh\ncat >>'" << std::string(tmp_ / "mail.txt") << "'\n";
    ::chmod(sendmail.c_str(), 0755);
  }
  AlertsSection Lab(const std::string& subscribe) {
    Result<AlertsSection> lab = ParseAlertsText(
        "sinks:\n  - {name: oncall, type: email, to: admins@example.org, sendmail: " +
            std::string(tmp_ / "sendmail") + "}\nsubscribe: [" + subscribe + "]\n",
        "alerts.yaml", true);
    EXPECT_TRUE(lab.ok()) << lab.status().ToString();
    return lab.ok() ? *lab : AlertsSection{};
  }
  // node-b excluded after two crashed attempts that srun blamed on it; the job held again,
  // now asking for both nodes.
  void ExcludeNodeBAndHoldTwoNodeJob() {
    for (int64_t restart = 0; restart < 2; ++restart) {
      ASSERT_TRUE(store_
                      ->Write([&]() -> Status {
                        BATON_ASSIGN_OR_RETURN(const int64_t id,
                                               store_->EnsureAttemptInTx(run_.id, job_, restart));
                        BATON_ASSIGN_OR_RETURN(AttemptRecord a, store_->GetAttempt(id));
                        a.nodes = "node-[a-b]";
                        a.ended_at = now_;
                        a.action = "requeue";
                        a.end_reason = "crashed";
                        return store_->UpdateAttemptInTx(a);
                      })
                      .ok());
      Append(tmp_ / ("run/logs/" + job_ + ".out"), "srun: error: node-b: task 1: Bus error\n");
      ASSERT_TRUE(RecordRunIncidents(*store_, run_, config_, now_, nullptr).ok());
      ASSERT_TRUE(JudgeNodes(*store_, config_.policy, now_, nullptr).ok());
    }
    slurm_.SetState(job_, "PENDING", "BeginTime");
    slurm_.job(job_)->restarts = 2;
    slurm_.job(job_)->fields["NumNodes"] = "2";
  }
  void Reconcile(const NodeRefusalHook& hook) {
    ReconcileOptions options;
    options.node_policy = &config_.policy;
    options.node_refusal = &hook;
    std::vector<std::string> changes;
    const Status st = ReconcileRun(*store_, slurm_, run_, now_, &changes, options);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  std::string Mail() {
    std::ifstream in(tmp_ / "mail.txt");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  RunRecord run_;
  std::string job_;
  NodeLedgerConfig config_;
  double now_ = 1.0e9;
};

TEST_F(NodeAlertTest, CannotExcludeIsAnIncidentKindASubscriptionMayName) {
  EXPECT_TRUE(IsIncidentKind("cannot_exclude"));
  EXPECT_EQ(Lab("cannot_exclude").subscribe, std::vector<std::string>{"cannot_exclude"});
}

TEST_F(NodeAlertTest, TheCapsRefusalReachesASubscribedSinkOnce) {
  ExcludeNodeBAndHoldTwoNodeJob();
  const AlertsSection lab = Lab("cannot_exclude, failed");
  const NodeRefusalHook hook = CannotExcludeHook(lab);
  Reconcile(hook);
  Reconcile(hook);                       // the same job again: told already
  EXPECT_TRUE(slurm_.excluded.empty());  // the job keeps both nodes

  const std::vector<IncidentRecord> incidents = ListOpenIncidents(*store_).value();
  EXPECT_TRUE(incidents.empty());  // final: nothing to follow up
  Result<int64_t> sent = DeliverDue(*store_, UnixTimeNow(), 10, nullptr);
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_EQ(*sent, 1);
  const std::string mail = Mail();
  EXPECT_NE(mail.find("To: admins@example.org"), std::string::npos) << mail;
  EXPECT_NE(mail.find("cannot_exclude"), std::string::npos) << mail;
  EXPECT_NE(mail.find("node-b"), std::string::npos) << mail;
  EXPECT_NE(mail.find("cannot exclude: job would not fit"), std::string::npos) << mail;
  EXPECT_EQ(DeliverDue(*store_, UnixTimeNow(), 10, nullptr).value(), 0);
}

// submit and resume: the new job's refusals, recorded twice (a retried command), reach the sink
// once.
TEST_F(NodeAlertTest, ANewJobsRefusalReachesASubscribedSinkOnce) {
  ExcludeNodeBAndHoldTwoNodeJob();
  const AlertsSection lab = Lab("cannot_exclude");
  const std::vector<ExclusionPlan::Refused> refused = {
      {"node-b", "cannot exclude: job would not fit (it needs 2 nodes of 2)"}};
  ASSERT_TRUE(RecordNewJobRefusals(*store_, lab, run_.id, job_, refused, now_).ok());
  ASSERT_TRUE(RecordNewJobRefusals(*store_, lab, run_.id, job_, refused, now_).ok());
  ASSERT_TRUE(RecordNewJobRefusals(*store_, lab, run_.id, job_, {}, now_).ok());
  EXPECT_EQ(DeliverDue(*store_, UnixTimeNow(), 10, nullptr).value(), 1);
  const std::string mail = Mail();
  EXPECT_NE(mail.find("node-b"), std::string::npos) << mail;
  EXPECT_NE(mail.find("would not fit"), std::string::npos) << mail;
  const NodeRecord b = FindNodesByHost(*store_, "node-b").value().at(0);
  EXPECT_EQ(ListNodeActions(*store_, b.id).value().at(0).action, "refuse");
}

TEST_F(NodeAlertTest, AnUnsubscribedSinkHearsNothingButTheRefusalIsRecorded) {
  ExcludeNodeBAndHoldTwoNodeJob();
  const AlertsSection lab = Lab("hang");
  const NodeRefusalHook hook = CannotExcludeHook(lab);
  Reconcile(hook);
  EXPECT_EQ(DeliverDue(*store_, UnixTimeNow(), 10, nullptr).value(), 0);
  EXPECT_TRUE(Mail().empty());
  const NodeRecord b = FindNodesByHost(*store_, "node-b").value().at(0);
  EXPECT_EQ(ListNodeActions(*store_, b.id).value().at(0).action, "refuse");
}

}  // namespace
}  // namespace baton
