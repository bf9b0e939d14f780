// Sweeps with the fake SLURM: the spec's axes, one array for all members, each member a full
// run whose job is its array task, refusals that create nothing, resume and cancel.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>

#include "orchestrator/history/sweep_view.h"
#include "orchestrator/nodes/manual_exclusion.h"
#include "orchestrator/nodes/node_policy.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/submit/sweep_spec.h"
#include "orchestrator/submit/sweeper.h"
#include "schema/atomic_file.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace baton {
namespace {

using test::Append;
using test::OpenStore;
using test::TempDir;

TEST(SweepSpec, GridIsTheCrossProductFirstKeySlowest) {
  SweepSpec spec = ParseSweepSpec(
                       "base: b.yaml\ngrid:\n  optim.lr: [1.0e-4, 3.0e-4]\n"
                       "  run.seed: [1, 2, 3]\n",
                       "/s/spec.yaml")
                       .value();
  EXPECT_EQ(spec.base, "/s/b.yaml");
  const std::vector<SweepMember> m = ExpandSweep(spec).value();
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].ValuesText(), "optim.lr=0.0001 run.seed=1");
  EXPECT_EQ(m[2].ValuesText(), "optim.lr=0.0001 run.seed=3");
  EXPECT_EQ(m[5].ValuesText(), "optim.lr=0.0003 run.seed=3");
  EXPECT_EQ(m[5].index, 5);
}

TEST(SweepSpec, ZipPairsAndRandomDrawsAreReproducible) {
  const std::string text =
      "base: b.yaml\nzip: {optim.warmup_steps: [10, 50], optim.lr: [1.0e-4, 3.0e-4]}\n"
      "random: {count: 3, seed: 7, keys: {optim.weight_decay: {log_uniform: [1.0e-5, 1.0e-1]},"
      " run.seed: {choice: [1, 2, 3]}}}\n";
  const std::vector<SweepMember> a = ExpandSweep(ParseSweepSpec(text, "s.yaml").value()).value();
  const std::vector<SweepMember> b = ExpandSweep(ParseSweepSpec(text, "s.yaml").value()).value();
  ASSERT_EQ(a.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].ValuesText(), b[i].ValuesText());
  EXPECT_EQ(a[0].values[0].second, 10);
  EXPECT_EQ(a[0].values[1].second, 1.0e-4);
  EXPECT_EQ(a[3].values[0].second, 50);
  for (const SweepMember& m : a) {
    const double wd = m.values[2].second.get<double>();
    EXPECT_GE(wd, 1.0e-5);
    EXPECT_LE(wd, 1.0e-1);
    const int64_t seed = m.values[3].second.get<int64_t>();
    EXPECT_TRUE(seed >= 1 && seed <= 3) << seed;
  }
  // Another seed, other draws.
  std::string other = text;
  other.replace(other.find("seed: 7"), 7, "seed: 8");
  const std::vector<SweepMember> c = ExpandSweep(ParseSweepSpec(other, "s.yaml").value()).value();
  EXPECT_NE(a[0].ValuesText(), c[0].ValuesText());
}

TEST(SweepSpec, BadSpecsNameTheKey) {
  auto code = [](const std::string& text) { return ParseSweepSpec(text, "s.yaml").status(); };
  EXPECT_EQ(code("base: b.yaml\ngrid: {optim.lr: []}\n").code(), Code::kInvalidArgument);
  EXPECT_EQ(code("base: b.yaml\ngrid: {}\n").code(), Code::kInvalidArgument);
  EXPECT_EQ(code("base: b.yaml\n").code(), Code::kInvalidArgument);
  const Status zip = code("base: b.yaml\nzip: {a.b: [1, 2], c.d: [1]}\n");
  EXPECT_EQ(zip.code(), Code::kConfig);
  EXPECT_NE(zip.message().find("zip.c.d"), std::string::npos) << zip.message();
  const Status twice = code("base: b.yaml\ngrid: {a.b: [1]}\nzip: {a.b: [2]}\n");
  EXPECT_NE(twice.message().find("a.b: varied by two axes"), std::string::npos);
  EXPECT_EQ(code("grid: {a.b: [1]}\n").code(), Code::kConfig);  // no base
  EXPECT_EQ(code("base: b.yaml\nmax_parallel: 0\ngrid: {a.b: [1]}\n").code(), Code::kConfig);
  EXPECT_EQ(code("base: b.yaml\ngird: {a.b: [1]}\n").code(), Code::kConfig);
}

TEST(SweepSpec, MemberConfigSetsNestedKeys) {
  SweepMember m{0, {{"optim.lr", 0.5}, {"run.seed", 3}, {"train.new.deep", "x"}}};
  const std::string yaml = MemberConfigYaml("run: {name: a, steps: 4}\n", m).value();
  EXPECT_NE(yaml.find("lr: 0.5"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("seed: 3"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("deep: x"), std::string::npos) << yaml;
  SweepMember bad{0, {{"run.name.x", 1}}};
  EXPECT_EQ(MemberConfigYaml("run: {name: a}\n", bad).status().code(), Code::kConfig);
}

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Append(tmp_ / "data/.keep", "");
    Append(tmp_ / "base.yaml",
           "run: {name: base, steps: 20}\ndata: {path: data}\n"
           "slurm: {partition: debug, cpus_per_task: 1, time: '10:00'}\n");
    store_ = OpenStore(tmp_ / "home/baton.db");
    req_.spec_path = tmp_ / "spec.yaml";
    req_.baton_bin = "/opt/bin/baton";
    req_.baton_home = tmp_ / "home";
  }
  void Spec(const std::string& axes) {
    std::filesystem::remove(req_.spec_path);
    Append(req_.spec_path, "base: base.yaml\nname: lr-seed\nmax_parallel: 2\n" + axes);
  }
  Status Submit() {
    Result<PreparedSweep> p = PrepareSweep(nullptr, slurm_, req_, 1);
    if (!p.ok()) return p.status();
    prepared_ = std::move(*p);
    return SubmitSweep(*store_, slurm_, req_, &prepared_, 1);
  }
  void ExpectNothingCreated() {
    EXPECT_TRUE(store_->ListRuns().value().empty());
    EXPECT_TRUE(ListSweeps(*store_).value().empty());
    EXPECT_TRUE(slurm_.submitted.empty());
    EXPECT_FALSE(fs::exists(tmp_ / "home/runs") && !fs::is_empty(tmp_ / "home/runs"));
    EXPECT_FALSE(fs::exists(tmp_ / "home/sweeps") && !fs::is_empty(tmp_ / "home/sweeps"));
  }
  TempDir tmp_;
  std::unique_ptr<Store> store_;
  FakeSlurmClient slurm_;
  SweepRequest req_;
  PreparedSweep prepared_;
};

TEST_F(SweepTest, OneArrayForAllMembersEachAFullRun) {
  Spec("grid: {optim.lr: [1.0e-4, 3.0e-4], run.seed: [1, 2]}\n");
  ASSERT_TRUE(Submit().ok()) << Submit().ToString();
  ASSERT_EQ(slurm_.submitted.size(), 1u);
  EXPECT_EQ(slurm_.arrays, std::vector<std::string>{"0-3%2"});
  const std::string array = prepared_.job_id;
  const std::vector<SweepMemberRecord> members =
      ListSweepMembers(*store_, prepared_.sweep_id).value();
  ASSERT_EQ(members.size(), 4u);
  for (const SweepMemberRecord& m : members) {
    const RunRecord run = store_->GetRun(m.run_id).value();
    EXPECT_EQ(run.job_id, array + "_" + std::to_string(m.index));
    EXPECT_EQ(run.name, "lr-seed-" + std::to_string(m.index));
    const RunConfig frozen = LoadRunConfig(run.run_dir + "/run.yaml").value();
    EXPECT_EQ(frozen.run.dir, run.run_dir);
    const nlohmann::json values = nlohmann::json::parse(m.values);
    EXPECT_DOUBLE_EQ(frozen.optim.lr, values["optim.lr"].get<double>());
    EXPECT_EQ(frozen.run.seed, values["run.seed"].get<int64_t>());
    EXPECT_TRUE(fs::exists(run.run_dir + "/sbatch.sh"));
  }
  // The array's task id picks the member's folder.
  const std::string& script = prepared_.array_script;
  for (const PreparedMember& p : prepared_.members) {
    EXPECT_NE(
        script.find("  " + std::to_string(p.member.index) + ") member_dir='" + p.run_dir + "' ;;"),
        std::string::npos)
        << script;
  }
  EXPECT_NE(script.find("exec '/opt/bin/baton' launch \"$member_dir\""), std::string::npos);
  EXPECT_NE(script.find("--output=" + prepared_.sweep_dir + "/logs/%A_%a.out"), std::string::npos);
  const SweepView view = BuildSweepView(*store_, FindSweep(*store_, "lr-seed").value()).value();
  EXPECT_EQ(view.counts.at("PENDING"), 4);
  EXPECT_EQ(SweepViewJson(view)["members"][2]["values"]["run.seed"], 1);
}

TEST_F(SweepTest, AKeyThatDoesNotExistIsRefusedNamingItAndNothingIsCreated) {
  Spec("grid: {optim.lrr: [1.0e-4, 3.0e-4]}\n");
  const Status st = Submit();
  EXPECT_EQ(st.code(), Code::kConfig);
  EXPECT_NE(st.message().find("lrr"), std::string::npos) << st.ToString();
  ExpectNothingCreated();
}

TEST_F(SweepTest, AValueOutOfRangeNamesTheMemberAndItsValues) {
  Spec("grid: {optim.lr: [1.0e-4, -1.0]}\n");
  const Status st = Submit();
  EXPECT_EQ(st.code(), Code::kConfig);
  EXPECT_NE(st.message().find("member 1 (optim.lr=-1.0)"), std::string::npos) << st.ToString();
  ExpectNothingCreated();
}

TEST_F(SweepTest, IdenticalMembersAreRefusedNamingBothIndexes) {
  Spec("grid: {run.seed: [1, 2, 1]}\n");
  const Status st = Submit();
  EXPECT_EQ(st.code(), Code::kConfig);
  EXPECT_NE(st.message().find("members 0 and 2 have identical configs"), std::string::npos)
      << st.ToString();
  ExpectNothingCreated();
}

TEST_F(SweepTest, MoreMembersThanMaxArraySizeAreRefusedNamingBoth) {
  slurm_.config["MaxArraySize"] = "3";
  Spec("grid: {run.seed: [1, 2, 3, 4]}\n");
  const Status st = Submit();
  EXPECT_EQ(st.code(), Code::kConfig);
  EXPECT_NE(st.message().find("4 members, above the cluster's MaxArraySize 3"), std::string::npos)
      << st.ToString();
  ExpectNothingCreated();
}

TEST_F(SweepTest, AnEmptyAxisIsUsage) {
  Spec("grid: {run.seed: []}\n");
  EXPECT_EQ(Submit().code(), Code::kInvalidArgument);
  ExpectNothingCreated();
}

TEST_F(SweepTest, SlurmRefusingTheArrayLeavesNothingBehind) {
  slurm_.reject_message = "invalid partition";
  Spec("grid: {run.seed: [1, 2]}\n");
  EXPECT_EQ(Submit().code(), Code::kConfig);
  slurm_.submitted.clear();
  ExpectNothingCreated();
}

TEST_F(SweepTest, MembersWithOtherResourcesAreRefused) {
  Spec("grid: {slurm.cpus_per_task: [1, 2]}\n");
  const Status st = Submit();
  EXPECT_EQ(st.code(), Code::kConfig);
  EXPECT_NE(st.message().find("member 1"), std::string::npos) << st.ToString();
}

TEST_F(SweepTest, ResumeResubmitsOnlyTheMembersNotCompleted) {
  Spec("grid: {run.seed: [1, 2, 3]}\n");
  ASSERT_TRUE(Submit().ok());
  const std::vector<SweepMemberRecord> members =
      ListSweepMembers(*store_, prepared_.sweep_id).value();
  ASSERT_TRUE(store_
                  ->Write([&]() -> Status {
                    BATON_RETURN_IF_ERROR(
                        store_->SetRunStatusInTx(members[0].run_id, RunStatus::kCompleted, "", 2));
                    return store_->SetRunStatusInTx(members[2].run_id, RunStatus::kFailed,
                                                    "crashed", 2);
                  })
                  .ok());
  const SweepRecord sweep = FindSweep(*store_, std::to_string(prepared_.sweep_id)).value();
  const std::vector<int64_t> resumed = ResumeSweep(*store_, slurm_, sweep, 3).value();
  EXPECT_EQ(resumed, std::vector<int64_t>{2});  // member 1 is still live
  ASSERT_EQ(slurm_.arrays.size(), 2u);
  EXPECT_EQ(slurm_.arrays[1], "2%1");
  const RunRecord run = store_->GetRun(members[2].run_id).value();
  EXPECT_EQ(run.status, RunStatus::kPending);
  EXPECT_EQ(run.job_id, FindSweep(*store_, "lr-seed").value().job_id + "_2");

  const int64_t cancelled =
      CancelSweep(*store_, slurm_, FindSweep(*store_, "lr-seed").value(), 4).value();
  EXPECT_EQ(cancelled, 2);
  EXPECT_EQ(store_->GetRun(members[1].run_id).value().status, RunStatus::kCancelled);
  EXPECT_EQ(store_->GetRun(members[0].run_id).value().status, RunStatus::kCompleted);
  EXPECT_TRUE(FindSweep(*store_, "lr-seed").value().cancelled);
}

// The array script's --exclude lines (the ledger's hosts, "" when none).
std::string ExcludeLines(const std::string& script) {
  std::string out;
  for (size_t at = script.find("#SBATCH --exclude="); at != std::string::npos;
       at = script.find("#SBATCH --exclude=", at + 1)) {
    out += script.substr(at, script.find('\n', at) - at) + ";";
  }
  return out;
}

TEST_F(SweepTest, ResumePassesTheNodeLedgersCurrentExclude) {
  Append(tmp_ / "nodes.yaml", "max_excluded_fraction: 0.5\n");
  ::setenv("BATON_NODES_CONFIG", (tmp_ / "nodes.yaml").c_str(), 1);
  Spec("grid: {run.seed: [1, 2]}\n");
  ASSERT_TRUE(Submit().ok());
  const std::string script_path = prepared_.sweep_dir + "/sweep.sh";
  EXPECT_EQ(ExcludeLines(ReadFile(script_path).value()), "");
  const std::vector<SweepMemberRecord> members =
      ListSweepMembers(*store_, prepared_.sweep_id).value();
  auto fail_all = [&](double now) {
    ASSERT_TRUE(store_
                    ->Write([&]() -> Status {
                      for (const SweepMemberRecord& m : members) {
                        BATON_RETURN_IF_ERROR(
                            store_->SetRunStatusInTx(m.run_id, RunStatus::kFailed, "node", now));
                      }
                      return Status::Ok();
                    })
                    .ok());
  };
  auto resume = [&](double now) {
    return ResumeSweep(*store_, slurm_, FindSweep(*store_, "lr-seed").value(), now);
  };
  // Excluded after the submit: the resumed array avoids it.
  fail_all(2);
  ManualNodeAction a;
  a.host = "node-b";
  a.cluster = store_->GetRun(members[0].run_id).value().cluster;
  a.partition = "debug";  // the members' (base.yaml)
  a.user = "admin";
  a.for_s = 3600;
  ASSERT_TRUE(ExcludeNodeByHand(*store_, a, 2).ok());
  ASSERT_EQ(resume(3).value().size(), 2u);
  ASSERT_EQ(slurm_.submitted.size(), 2u);
  EXPECT_EQ(ExcludeLines(ReadFile(slurm_.submitted[1]).value()), "#SBATCH --exclude=node-b;");
  const std::string excluded = ReadFile(script_path).value();
  // The line sits with the other #SBATCH lines, before the first command.
  EXPECT_LT(excluded.find("#SBATCH --exclude=node-b"), excluded.find("\necho "));
  // SLURM refusing the array leaves the script as it was.
  fail_all(4);
  ASSERT_TRUE(ReadmitNode(*store_, a, LoadNodePolicy(tmp_ / "nodes.yaml").value(), 4).ok());
  slurm_.reject_message = "invalid partition";
  EXPECT_FALSE(resume(5).ok());
  EXPECT_EQ(ReadFile(script_path).value(), excluded);
  // Readmitted: the next resume excludes nothing.
  slurm_.reject_message.clear();
  ASSERT_EQ(resume(6).value().size(), 2u);
  EXPECT_EQ(ExcludeLines(ReadFile(slurm_.submitted.back()).value()), "");
  ::unsetenv("BATON_NODES_CONFIG");
}

// node-b excluded by hand, but the default cap (10 %) excludes nothing of a 2-node partition:
// the array keeps it, and the refusal comes back for the command to record and alert on.
TEST_F(SweepTest, AnExclusionOverTheCapIsReturnedNotApplied) {
  ::setenv("BATON_NODES_CONFIG", (tmp_ / "no-nodes.yaml").c_str(), 1);  // the default policy
  ManualNodeAction a;
  a.host = "node-b";
  a.cluster = "fake";     // the fake SLURM's ClusterName
  a.partition = "debug";  // the members' (base.yaml)
  a.user = "admin";
  a.for_s = 3600;
  ASSERT_TRUE(ExcludeNodeByHand(*store_, a, 1).ok());
  Spec("grid: {run.seed: [1, 2]}\n");
  const Status st = Submit();
  ::unsetenv("BATON_NODES_CONFIG");
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(prepared_.exclusion_refused.size(), 1u);
  EXPECT_EQ(prepared_.exclusion_refused[0].host, "node-b");
  EXPECT_NE(prepared_.exclusion_refused[0].why.find("over the cap"), std::string::npos)
      << prepared_.exclusion_refused[0].why;
  EXPECT_EQ(ExcludeLines(ReadFile(prepared_.sweep_dir + "/sweep.sh").value()), "");
}

}  // namespace
}  // namespace baton
