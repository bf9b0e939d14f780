// Several users, one database: reconcile and the requeue-hold release act only on the jobs of the
// user they run as (SLURM's UserId), root and operators on all, and say so (job_permission.h).
#include "orchestrator/reconcile/job_permission.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "orchestrator/ingest/event_ingester.h"
#include "orchestrator/reconcile/reconciler.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "schema/checkpoint_manifest.h"
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

JobInfo JobOf(const std::string& user_id) {
  JobInfo j;
  j.job_id = "12";
  j.fields["UserId"] = user_id;
  return j;
}

TEST(JobPermission, ParsesSlurmsUserIds) {
  SlurmUserId u = ParseSlurmUserId("alice(1001)");
  EXPECT_EQ(u.name, "alice");
  EXPECT_EQ(u.uid, 1001);
  u = ParseSlurmUserId("bob");
  EXPECT_EQ(u.name, "bob");
  EXPECT_FALSE(u.uid);
  EXPECT_FALSE(ParseSlurmUserId("x(12a)").uid);
  EXPECT_EQ(JobOwnerName(JobOf("carol(7)")), "carol");
  EXPECT_EQ(JobOwnerName(JobInfo{}), "");
}

TEST(JobPermission, OwnersAndOperatorsMayActOthersMayNot) {
  const ActingUser alice{1001, "alice", false};
  EXPECT_FALSE(NotYours(alice, JobOf("alice(1001)")));
  EXPECT_FALSE(NotYours(alice, JobOf("alice")));  // no uid: by name
  EXPECT_FALSE(NotYours(alice, JobInfo{}));       // no UserId at all: as before
  EXPECT_EQ(NotYours(alice, JobOf("bob(1002)")).value_or(""),
            "skipped job 12 of user bob: not yours");
  // The uid decides when SLURM gives one (a renamed account is still its owner).
  EXPECT_FALSE(NotYours(alice, JobOf("alice-old(1001)")));
  EXPECT_TRUE(NotYours(alice, JobOf("alice(1003)")));
  const ActingUser op{1005, "op", true};
  EXPECT_FALSE(NotYours(op, JobOf("bob(1002)")));
}

TEST(JobPermission, RootAndTheSlurmUserActOnAllJobs) {
  const ActingUser me = CurrentActingUser();
  EXPECT_EQ(me.uid, static_cast<int64_t>(::getuid()));
  EXPECT_FALSE(me.name.empty());
  if (me.uid == 0) {
    EXPECT_TRUE(me.acts_on_all_jobs);
  }
  const ActingUser as_slurm =
      CurrentActingUser({{"SlurmUser", me.name + "(" + std::to_string(me.uid) + ")"}});
  EXPECT_TRUE(as_slurm.acts_on_all_jobs);
}

// The clean preemption of hold_release.h, with the job owned by another user.
class OtherUsersJob : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenStore(tmp_ / "baton.db");
    run_ = MakeRun(*store_, tmp_ / "run", "r", /*target=*/10);
    job_ = slurm_.Submit("/x/sbatch.sh").value();
    const std::string yaml = "run: {steps: 10}\ndata: {path: /data}\n";
    ASSERT_TRUE(store_
                    ->Write([&]() -> Status {
                      BATON_RETURN_IF_ERROR(store_->SetRunJobInTx(run_.id, job_, 1));
                      return store_->SetRunDirInTx(run_.id, run_.run_dir, yaml);
                    })
                    .ok());
    run_ = store_->GetRun(run_.id).value();
    const std::string ckpt = tmp_ / "run/checkpoints/checkpoint_step_5";
    std::filesystem::create_directories(ckpt);
    // A full checkpoint that verifies: the hold release checks it as the trainer would.
    for (const char* f : {kWeightsFile, kModelConfigFile, kOptimizerFile})
      Append(ckpt + "/" + f, std::string("bytes of ") + f);
    Append(ckpt + "/" + kStateFile, "{\"step\": 5}");
    CheckpointManifest m;
    m.step = 5;
    ASSERT_TRUE(WriteManifest(ckpt, m, RequiredFiles("full")).ok());
    std::string text = StartLine("fresh", 0);
    for (int s = 0; s < 5; ++s) text += StepLine(s);
    text += "{\"type\":\"checkpoint\",\"time\":1.5,\"source\":\"trainer\",\"step\":5,\"path\":\"" +
            ckpt +
            "\",\"bytes\":64,\"seconds\":0.1,\"reason\":\"signal\"}\n"
            "{\"type\":\"segment_end\",\"time\":1.8,\"source\":\"trainer\",\"step\":5,"
            "\"reason\":\"signal\",\"signal\":\"USR1\",\"exit_code\":75}\n" +
            EndLine("requeue", "preempted", 75);
    Append(RunFolder{tmp_ / "run"}.EventsFile(job_, 0), text);
    ASSERT_TRUE(IngestRun(*store_, run_).ok());
    slurm_.SetState(job_, "PENDING", "BeginTime");
    slurm_.job(job_)->restarts = 1;
    slurm_.job(job_)->fields["UserId"] = "bob(4242)";
  }
  std::vector<std::string> Pass(const ActingUser& as) {
    std::vector<std::string> changes;
    ReconcileOptions watch;
    watch.release_requeue_holds = true;
    watch.acting_user = &as;
    EXPECT_TRUE(
        ReconcileRun(*store_, slurm_, store_->GetRun(run_.id).value(), 10.0, &changes, watch).ok());
    return changes;
  }

  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  RunRecord run_;
  std::string job_;
};

TEST_F(OtherUsersJob, IsNeitherReconciledNorReleasedAndWatchSaysSo) {
  const RunRecord before = store_->GetRun(run_.id).value();
  slurm_.SetState(job_, "CANCELLED");  // what SLURM says would change the run, were it ours
  slurm_.job(job_)->fields["UserId"] = "bob(4242)";
  const std::vector<std::string> changes = Pass(ActingUser{1001, "alice", false});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0],
            "run " + std::to_string(run_.id) + ": skipped job " + job_ + " of user bob: not yours");
  EXPECT_EQ(store_->GetRun(run_.id).value().status, before.status);
  EXPECT_TRUE(slurm_.released.empty());
}

TEST_F(OtherUsersJob, ItsOwnerReleasesTheHold) {
  const std::vector<std::string> changes = Pass(ActingUser{4242, "bob", false});
  EXPECT_EQ(slurm_.released, std::vector<std::string>{job_});
  for (const std::string& c : changes) EXPECT_EQ(c.find("not yours"), std::string::npos) << c;
}

TEST_F(OtherUsersJob, AnOperatorReleasesTheHold) {
  Pass(ActingUser{1001, "alice", /*acts_on_all_jobs=*/true});
  EXPECT_EQ(slurm_.released, std::vector<std::string>{job_});
}

}  // namespace
}  // namespace baton
