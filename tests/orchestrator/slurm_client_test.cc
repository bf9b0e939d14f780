// The SLURM seam's pieces that need no SLURM: parsing scontrol, running processes.
#include "orchestrator/slurm/slurm_client.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "orchestrator/slurm/process_runner.h"
#include "orchestrator/slurm/real_slurm_client.h"

namespace baton {
namespace {

TEST(ScontrolParse, ReadsFieldsWithSpacesInValues) {
  const JobInfo j = ParseScontrolJob(
      "JobId=29 JobName=baton-1-it UserId=root(0) Priority=1 Reason=BeginTime Dependency=(null) "
      "Requeue=1 Restarts=1 BatchFlag=1 ExitCode=0:0 JobState=PENDING NodeList=(null) "
      "Partition=debug Command=/tmp/a b/sbatch.sh WorkDir=/tmp/a b\n");
  EXPECT_EQ(j.job_id, "29");
  EXPECT_EQ(j.state, "PENDING");
  EXPECT_EQ(j.reason, "BeginTime");
  EXPECT_EQ(j.restarts, 1);
  EXPECT_EQ(j.exit_code, "0:0");
  EXPECT_EQ(j.nodes, "");
  EXPECT_EQ(j.partition, "debug");
  EXPECT_EQ(j.fields.at("Command"), "/tmp/a b/sbatch.sh");
  EXPECT_EQ(j.fields.at("WorkDir"), "/tmp/a b");
}

TEST(ScontrolParse, ReadsAPartitionsGraceAndTheKillWait) {
  const std::string parts =
      "PartitionName=gpu AllowGroups=ALL Default=NO GraceTime=120 MaxTime=INFINITE\n"
      "PartitionName=debug AllowGroups=ALL Default=YES GraceTime=30 State=UP\n"
      "PartitionName=high Default=NO State=UP\n";
  EXPECT_EQ(ParsePartitionGrace(parts, "gpu").value().grace_time_s, 120);
  const PreemptGrace d = ParsePartitionGrace(parts, "").value();
  EXPECT_EQ(d.partition, "debug");
  EXPECT_EQ(d.grace_time_s, 30);
  EXPECT_EQ(ParsePartitionGrace(parts, "high").value().grace_time_s, 0);  // none: no grace
  const Status missing = ParsePartitionGrace(parts, "nope").status();
  EXPECT_EQ(missing.code(), Code::kConfig);
  EXPECT_NE(missing.message().find("'nope'"), std::string::npos);
  EXPECT_EQ(ParsePartitionGrace("PartitionName=x GraceTime=abc\n", "x").status().code(),
            Code::kConfig);
  EXPECT_EQ(
      ParseKillWait("JobAcctGatherType       = (null)\nKillWait                = 30 sec\n").value(),
      30);
  EXPECT_FALSE(ParseKillWait("MinJobAge = 300 sec\n").ok());
}

TEST(ScontrolParse, RecognisesAControllerThatIsDown) {
  EXPECT_TRUE(
      LooksLikeControllerDown("sbatch: error: Batch job submission failed: Unable to contact slurm "
                              "controller (connect failure)"));
  EXPECT_FALSE(LooksLikeControllerDown("sbatch: error: invalid partition specified: nope"));
}

TEST(ProcessRunner, CapturesOutputAndExitCode) {
  ProcessResult r = RunProcess({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10).value();
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);
}

TEST(ProcessRunner, ArgumentsAreNeverReparsedByAShell) {
  ProcessResult r = RunProcess({"printf", "%s", "a; rm -rf / $(x)"}, 10).value();
  EXPECT_EQ(r.out, "a; rm -rf / $(x)");
}

TEST(ProcessRunner, TimesOut) {
  ProcessResult r = RunProcess({"sleep", "5"}, 0.2).value();
  EXPECT_TRUE(r.timed_out);
}

TEST(ProcessRunner, AMissingProgramIsUnavailableAndNamed) {
  Result<ProcessResult> r = RunProcess({"baton-no-such-program"}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_NE(r.status().message().find("baton-no-such-program"), std::string::npos);
}

TEST(RealSlurmClient, MissingSbatchIsUnavailable) {
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", "", 1);
  RealSlurmClient slurm(5);
  Result<std::string> r = slurm.Submit("/nonexistent/sbatch.sh");
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().exit_code(), 69);
  EXPECT_NE(r.status().message().find("sbatch"), std::string::npos);
}

}  // namespace
}  // namespace baton
