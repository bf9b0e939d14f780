// The cluster and owner `baton submit` records (run_cluster.h): slurm.cluster, else SLURM's
// ClusterName from `scontrol show config`; a name the local SLURM contradicts is refused; the
// submitting user is the run's owner. With the fake SLURM.
#include "orchestrator/submit/run_cluster.h"

#include <gtest/gtest.h>

#include "orchestrator/reconcile/job_permission.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/submit/submitter.h"
#include "test_util.h"

namespace baton {
namespace {

using test::Append;
using test::OpenStore;
using test::TempDir;

TEST(RunCluster, ParsesShowConfig) {
  const std::map<std::string, std::string> c = ParseShowConfig(
      "Configuration data as of 2026-01-01T00:00:00\n"
      "ClusterName             = north\n"
      "KillWait                = 30 sec\n"
      "SlurmUser               = slurm(64030)\n"
      "Slurmctld(primary) at vm is UP\n");
  EXPECT_EQ(c.at("ClusterName"), "north");
  EXPECT_EQ(c.at("KillWait"), "30 sec");
  EXPECT_EQ(c.at("SlurmUser"), "slurm(64030)");
  EXPECT_EQ(c.count("Configuration data as of 2026-01-01T00:00:00"), 0u);
}

TEST(RunCluster, ConfigNameOrSlurmsAndNeverAContradiction) {
  FakeSlurmClient slurm;
  slurm.config = {{"ClusterName", "north"}};
  SlurmSection s;
  EXPECT_EQ(ResolveRunCluster(s, "cfg.yaml", slurm).value(), "north");
  s.cluster = "north";
  EXPECT_EQ(ResolveRunCluster(s, "cfg.yaml", slurm).value(), "north");
  s.cluster = "south";
  Result<std::string> r = ResolveRunCluster(s, "cfg.yaml", slurm);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kConfig);
  EXPECT_NE(r.status().message().find("cfg.yaml: slurm.cluster: 'south'"), std::string::npos);
  EXPECT_NE(r.status().message().find("'north'"), std::string::npos);
  // A SLURM without a ClusterName, or one that does not answer: the config's name stands.
  slurm.config = {};
  EXPECT_EQ(ResolveRunCluster(s, "cfg.yaml", slurm).value(), "south");
  slurm.down = true;
  EXPECT_EQ(ResolveRunCluster(s, "cfg.yaml", slurm).value(), "south");
  s.cluster = "";
  EXPECT_EQ(ResolveRunCluster(s, "cfg.yaml", slurm).value(), "");
}

TEST(RunCluster, SubmitRecordsOwnerAndClusterOnTheRunAndItsAttempts) {
  TempDir tmp;
  Append(tmp / "data/.keep", "");
  Append(tmp / "cfg.yaml", "run: {name: c, steps: 20}\ndata: {path: data}\n");
  Append(tmp / "other.yaml",
         "run: {name: c, steps: 20}\ndata: {path: data}\nslurm: {cluster: south}\n");
  auto store = OpenStore(tmp / "home/baton.db");
  FakeSlurmClient slurm;
  slurm.config = {{"ClusterName", "north"}};
  SubmitRequest req;
  req.config_path = tmp / "cfg.yaml";
  req.baton_bin = "/opt/bin/baton";
  req.baton_home = tmp / "home";
  const SubmitResult r = SubmitRun(store.get(), slurm, req, 1).value();
  const RunRecord run = store->GetRun(r.run_id).value();
  EXPECT_EQ(run.cluster, "north");
  EXPECT_EQ(run.owner, CurrentActingUser().name);
  EXPECT_FALSE(run.owner.empty());

  req.config_path = tmp / "other.yaml";
  Result<SubmitResult> refused = SubmitRun(store.get(), slurm, req, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kConfig);
  EXPECT_EQ(slurm.submitted.size(), 1u);  // nothing submitted for the refused one
  EXPECT_EQ(store->ListRuns().value().size(), 1u);
}

}  // namespace
}  // namespace baton
