// The node rules as pure functions: host names as evidence, the RE2 node-fault patterns, the
// policy file, and the exclusion arithmetic (threshold, window, TTL, probation, the cap).
#include <gtest/gtest.h>

#include <fstream>

#include "../common/temp_dir.h"
#include "orchestrator/launcher/straggler_watch.h"
#include "orchestrator/nodes/host_name.h"
#include "orchestrator/nodes/log_patterns.h"
#include "orchestrator/nodes/node_policy.h"

namespace baton {
namespace {

TEST(HostName, AcceptsHostNamesOnly) {
  EXPECT_TRUE(ValidHostName("baton-n2"));
  EXPECT_TRUE(ValidHostName("gpu017.cluster.example.org"));
  for (const char* bad : {"", "a;rm -rf /", "n1/../x", "node[1-2]", "a,b", "-lead", "trail-",
                          "a..b", "a b", "$(id)", "n1\n", "x`y`"}) {
    EXPECT_FALSE(ValidHostName(bad)) << bad;
  }
  EXPECT_FALSE(ValidHostName(std::string(64, 'a')));  // one label over 63
  std::string long_name;
  while (long_name.size() < 256) long_name += "abcdefgh.";
  EXPECT_FALSE(ValidHostName(long_name));
  EXPECT_EQ(JoinHostNames({"a", "b"}), "a,b");
}

LogPatterns Defaults() {
  Result<LogPatterns> p = LogPatterns::Compile(DefaultNodeFaultPatterns());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

TEST(LogPatterns, DefaultsNameTheHost) {
  const std::string log =
      "step 10 loss 1.0\n"
      "srun: error: baton-n2: task 1: Bus error (core dumped)\n"
      "srun: error: gpu4: tasks 0-3: Out Of Memory\n"
      "gpu7:1234:1300 [3] NCCL WARN Net : Connection closed by remote peer gpu9.lab<45678>\n"
      "gpu3:99:100 [0] misc.cc:10 CUDA error: unspecified launch failure\n"
      "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
      "OSError: [Errno 5] Input/output error: '/data/x'\n"
      "RuntimeError: CUDA error: uncorrectable ECC error encountered\n";
  const std::vector<LogMatch> m = Defaults().Scan(log);
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m[0].kind, "signal");
  EXPECT_EQ(m[0].host, "baton-n2");
  EXPECT_EQ(m[1].kind, "oom");
  EXPECT_EQ(m[1].host, "gpu4");
  EXPECT_EQ(m[2].kind, "nccl_peer");
  EXPECT_EQ(m[2].host, "gpu9.lab");  // the peer, not the host that printed it
  EXPECT_EQ(m[3].kind, "cuda_launch");
  EXPECT_EQ(m[3].host, "gpu3");
  EXPECT_EQ(m[4].kind, "xid");
  EXPECT_EQ(m[4].host, "");  // names no host: the caller decides
  EXPECT_EQ(m[5].kind, "io");
  EXPECT_EQ(m[6].kind, "ecc");
}

TEST(LogPatterns, NotNodeFaults) {
  // A run's own errors match nothing: NaN, config, a Python bug, a segfault line not from srun.
  const std::vector<LogMatch> m = Defaults().Scan(
      "baton-train: loss is NaN at step 5\nconfig error: run.steps: 0\nKeyError: 'x'\n"
      "CUDA error: out of memory\n");
  EXPECT_TRUE(m.empty());
}

TEST(LogPatterns, HostileHostIsRefused) {
  const std::vector<LogMatch> m =
      Defaults().Scan("srun: error: a..b: task 1: Segmentation fault\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].host, "");
  EXPECT_TRUE(m[0].host_refused);
}

TEST(LogPatterns, BadPatternNamesItself) {
  Result<LogPatterns> p = LogPatterns::Compile({{"mine", "(unclosed"}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kConfig);
  EXPECT_NE(p.status().message().find("'mine'"), std::string::npos);
  EXPECT_NE(p.status().message().find("(unclosed"), std::string::npos);
  EXPECT_FALSE(LogPatterns::Compile({{"Bad Kind", "x"}}).ok());
}

TEST(LogPatterns, MatchesAreCapped) {
  std::string log;
  for (int i = 0; i < 1000; ++i) log += "srun: error: n1: task 0: Bus error\n";
  EXPECT_EQ(Defaults().Scan(log).size(), kMaxLogMatches);
}

TEST(LogTail, ReadsOnlyNewBytesAndAtMostOneMiB) {
  test::TempDir tmp;
  const std::string path = tmp / "log";
  EXPECT_EQ(ReadLogTail(path, 0).value().text, "");  // no log yet
  { std::ofstream(path) << "one\ntwo\n"; }
  LogTail t = ReadLogTail(path, 0).value();
  EXPECT_EQ(t.text, "one\ntwo\n");
  EXPECT_EQ(t.next_offset, 8);
  { std::ofstream(path, std::ios::app) << "three\n"; }
  EXPECT_EQ(ReadLogTail(path, t.next_offset).value().text, "three\n");
  {
    std::ofstream out(path, std::ios::app);
    out << std::string(kMaxLogScanBytes + 100, 'x') << "\nlast\n";
  }
  t = ReadLogTail(path, 14).value();
  EXPECT_EQ(t.text, "last\n");  // the cut line is dropped
  EXPECT_GT(t.skipped_bytes, 0);
}

TEST(Duration, Parses) {
  EXPECT_EQ(ParseDuration("90", "x").value(), 90);
  EXPECT_EQ(ParseDuration("15m", "x").value(), 900);
  EXPECT_EQ(ParseDuration("6h", "x").value(), 6 * 3600);
  EXPECT_EQ(ParseDuration("2d", "x").value(), 2 * 86400);
  for (const char* bad : {"", "h", "-1h", "0", "1w", "1e9", "abc", "400d"}) {
    Result<double> d = ParseDuration(bad, "--for");
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find("--for"), std::string::npos);
  }
}

TEST(PolicyFile, ReadsKeysAndNamesBadOnes) {
  test::TempDir tmp;
  const std::string path = tmp / "nodes.yaml";
  EXPECT_EQ(LoadNodePolicy(path).value().min_incidents, 2);  // no file: the defaults
  std::ofstream(path) << "exclude_after_incidents: 3\nttl: 2h\nmax_excluded_fraction: 0.5\n"
                         "patterns: [{kind: site, regex: 'disk \\d+ failed'}]\n";
  NodePolicy p = LoadNodePolicy(path).value();
  EXPECT_EQ(p.min_incidents, 3);
  EXPECT_EQ(p.ttl_s, 7200);
  EXPECT_EQ(p.max_excluded_fraction, 0.5);
  EXPECT_EQ(p.patterns.size(), DefaultNodeFaultPatterns().size() + 1);
  std::ofstream(path) << "patterns: [{kind: site, regex: 'a(b'}]\n";
  Result<NodePolicy> bad = LoadNodePolicy(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().exit_code(), 78);
  EXPECT_NE(bad.status().message().find("'site'"), std::string::npos);
  EXPECT_NE(bad.status().message().find(path), std::string::npos);
  std::ofstream(path) << "exclude_after: 3\n";
  EXPECT_NE(LoadNodePolicy(path).status().message().find("exclude_after"), std::string::npos);
  std::ofstream(path) << "ttl: forever\n";
  EXPECT_EQ(LoadNodePolicy(path).status().code(), Code::kConfig);
}

constexpr double kH = 3600;

TEST(JudgeNode, TwoIncidentsInTheWindowExclude) {
  NodePolicy p;
  NodeRecord n;
  const double now = 100 * kH;
  EXPECT_EQ(JudgeNode(n, {now - 1}, now, p).action, NodeVerdict::Action::kNone);
  NodeVerdict v = JudgeNode(n, {now - 1, now - 23 * kH}, now, p);
  EXPECT_EQ(v.action, NodeVerdict::Action::kExclude);
  EXPECT_EQ(v.until, now + 24 * kH);
  EXPECT_EQ(v.counted, 2);
  // One of them older than the window: no exclusion.
  EXPECT_EQ(JudgeNode(n, {now - 1, now - 25 * kH}, now, p).action, NodeVerdict::Action::kNone);
}

TEST(JudgeNode, ExpiryReadmitsOnProbation) {
  NodePolicy p;
  p.ttl_s = 10;
  NodeRecord n;
  const double t0 = 100 * kH;
  ApplyVerdict(JudgeNode(n, {t0 - 2, t0 - 1}, t0, p), t0, p, &n);
  EXPECT_TRUE(ExcludedAt(n, t0 + 9));
  EXPECT_EQ(JudgeNode(n, {t0 - 2, t0 - 1}, t0 + 9, p).action, NodeVerdict::Action::kNone);
  const NodeVerdict expire = JudgeNode(n, {t0 - 2, t0 - 1}, t0 + 10, p);
  ASSERT_EQ(expire.action, NodeVerdict::Action::kExpire);
  ApplyVerdict(expire, t0 + 10, p, &n);
  EXPECT_FALSE(ExcludedAt(n, t0 + 10));
  EXPECT_EQ(n.admitted_at, t0 + 10);
  EXPECT_EQ(*n.probation_until, t0 + 10 + 24 * kH);
  // The incidents before the re-admission no longer count...
  EXPECT_EQ(JudgeNode(n, {t0 - 2, t0 - 1}, t0 + 11, p).action, NodeVerdict::Action::kNone);
  // ...but on probation one new incident excludes again.
  EXPECT_EQ(JudgeNode(n, {t0 - 2, t0 - 1, t0 + 20}, t0 + 21, p).action,
            NodeVerdict::Action::kExclude);
  // After probation it takes two again.
  const double later = t0 + 10 + 25 * kH;
  EXPECT_EQ(JudgeNode(n, {later - 1}, later, p).action, NodeVerdict::Action::kNone);
}

TEST(PlanExclusion, CapAndFit) {
  std::vector<std::string> twenty;
  for (int i = 0; i < 20; ++i) twenty.push_back("n" + std::to_string(i));
  // 10 % of 20 nodes: 2.
  ExclusionPlan p = PlanExclusion({"n1", "n2", "n3"}, twenty, 1, 0.1);
  EXPECT_EQ(p.exclude, (std::vector<std::string>{"n1", "n2"}));
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_EQ(p.refused[0].host, "n3");
  EXPECT_NE(p.refused[0].why.find("over the cap of 10%"), std::string::npos);
  // 10 % of 10 is exactly one, not zero.
  EXPECT_EQ(PlanExclusion({"n1"}, {twenty.begin(), twenty.begin() + 10}, 1, 0.1).exclude.size(),
            1u);
  // Two nodes, a job that needs both: nothing excluded, "would not fit".
  p = PlanExclusion({"b"}, {"a", "b"}, 2, 0.5);
  EXPECT_TRUE(p.exclude.empty());
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_NE(p.refused[0].why.find("cannot exclude: job would not fit"), std::string::npos);
  // The same job on one node fits.
  EXPECT_EQ(PlanExclusion({"b"}, {"a", "b"}, 1, 0.5).exclude, std::vector<std::string>{"b"});
  // The default cap excludes nothing of a 2-node partition.
  EXPECT_TRUE(PlanExclusion({"b"}, {"a", "b"}, 1, 0.1).exclude.empty());
  // A node SLURM no longer lists is dropped, not counted.
  p = PlanExclusion({"gone", "b"}, {"a", "b"}, 1, 0.5);
  EXPECT_EQ(p.dropped, std::vector<std::string>{"gone"});
  EXPECT_EQ(p.exclude, std::vector<std::string>{"b"});
}

std::map<int64_t, HeartbeatRecord> Beats(int64_t step, const std::vector<double>& step_s) {
  std::map<int64_t, HeartbeatRecord> beats;
  for (size_t r = 0; r < step_s.size(); ++r) {
    HeartbeatRecord b;
    b.rank = int64_t(r);
    b.node = "n" + std::to_string(r);
    b.step = step;
    b.step_s = step_s[r];
    beats[int64_t(r)] = b;
  }
  return beats;
}

TEST(StragglerWatch, ASlowRankForMStepsIsNamedOnce) {
  StragglerWatch w({/*factor=*/3.0, /*steps=*/4});
  for (int64_t step = 1; step <= 3; ++step) {
    EXPECT_TRUE(w.Observe(Beats(step, {1.0, 1.1, 5.0, 0.9})).empty());
    // The same step seen again is not a new sample.
    EXPECT_TRUE(w.Observe(Beats(step, {1.0, 1.1, 5.0, 0.9})).empty());
  }
  const std::vector<Straggler> s = w.Observe(Beats(4, {1.0, 1.1, 5.0, 0.9}));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].rank, 2);
  EXPECT_EQ(s[0].node, "n2");
  EXPECT_EQ(s[0].steps, 4);
  EXPECT_TRUE(w.Observe(Beats(5, {1.0, 1.1, 5.0, 0.9})).empty());  // once
  EXPECT_EQ(w.found().size(), 1u);
}

TEST(StragglerWatch, AFastStepResetsTheStreakAndTwoRanksJudgeNothing) {
  StragglerWatch w({3.0, 3});
  w.Observe(Beats(1, {1, 1, 9}));
  w.Observe(Beats(2, {1, 1, 9}));
  w.Observe(Beats(3, {1, 1, 1}));  // back in line
  w.Observe(Beats(4, {1, 1, 9}));
  EXPECT_TRUE(w.Observe(Beats(5, {1, 1, 9})).empty());
  EXPECT_EQ(w.Observe(Beats(6, {1, 1, 9})).size(), 1u);
  StragglerWatch two({3.0, 1});
  EXPECT_TRUE(two.Observe(Beats(1, {1, 9})).empty());
  EXPECT_TRUE(two.Observe(Beats(2, {1, 9})).empty());
}

}  // namespace
}  // namespace baton
