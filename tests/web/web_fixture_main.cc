// baton_web_fixture: fills $BATON_HOME-style folders with run history for the browser tests and
// the web bench, through the real path (run_fixture.h: event files + IngestRun).
//
//   baton_web_fixture --db DB --runs-root DIR [--scale N] [--extra-runs N] [--big-scale N]
//                     [--no-compare] [--no-rollups] [--sweep]
//
// Creates the demo run (3 attempts, weights-only resume; ×N steps with --scale), a run with
// non-finite (skipped) steps that diverged (with its job log, logs/3003.out), a live run named
// <script>alert(1)</script>, N small completed runs, two runs to compare with the demo
// ("compare-lr-high" on partition "a100" with micro-step profiles, "compare-short" — unless
// --no-compare), and with --big-scale N a demo run ×N ("million-demo"; N = 1667 gives 1,000,200
// effective steps). --no-rollups skips the series rollups (the web bench's ingest baseline).
// --sweep adds the six-member sweep "lr-seed" of sweep_fixture.h. Prints
// {"demo_run_id":..,"nonfinite_run_id":..,"xss_run_id":..,"compare_run_ids":[..],"big_run_id":..,
// "sweep_id":..,"sweep_run_ids":[..],"runs":..,"step_rows":..} on stdout.
#include <cstdlib>
#include <iostream>
#include <string>

#include "run_fixture.h"
#include "sweep_fixture.h"

namespace {

int Usage() {
  std::cerr << "usage: baton_web_fixture --db DB --runs-root DIR [--scale N] [--extra-runs N] "
               "[--big-scale N] [--no-compare] [--no-rollups] [--sweep]\n";
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  std::string db, root;
  int64_t scale = 1, extra = 0, big = 0;
  bool compare = true, rollups = true, sweep = false;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--no-compare" || k == "--no-rollups" || k == "--sweep") {
      if (k == "--sweep")
        sweep = true;
      else
        (k == "--no-compare" ? compare : rollups) = false;
      --i;
      continue;
    }
    if (i + 1 >= argc) return Usage();
    const std::string v = argv[i + 1];
    if (k == "--big-scale")
      big = std::atoll(v.c_str());
    else if (k == "--db")
      db = v;
    else if (k == "--runs-root")
      root = v;
    else if (k == "--scale")
      scale = std::atoll(v.c_str());
    else if (k == "--extra-runs")
      extra = std::atoll(v.c_str());
    else
      return Usage();
  }
  if (db.empty() || root.empty() || scale < 1 || extra < 0 || big < 0) return Usage();
  using namespace baton;
  Result<std::unique_ptr<Store>> store = Store::Open(db);
  if (!store.ok()) {
    std::cerr << store.status().ToString() << "\n";
    return 1;
  }
  (*store)->set_series_rollups(rollups);
  auto check = [](const Result<int64_t>& r) {
    if (!r.ok()) {
      std::cerr << "baton_web_fixture: " << r.status().ToString() << "\n";
      std::exit(1);
    }
    return r.value();
  };
  for (int64_t i = 0; i < extra; ++i) {
    webtest::RunSpec r = webtest::DemoRunSpec("sweep-" + std::to_string(i));
    r.target_steps = 20;
    r.warmup_steps = 5;
    r.attempts = {webtest::Attempt(std::to_string(5000 + i), 0, "fresh", 0, 20, 0, {10, 20}, "done",
                                   "completed", 1.6e9 + double(i) * 100)};
    check(webtest::CreateRunThroughIngest(**store, root, r));
  }
  const int64_t demo = check(webtest::CreateRunThroughIngest(
      **store, root, webtest::DemoRunSpec("preempted-demo", scale)));
  const int64_t nonfinite =
      check(webtest::CreateRunThroughIngest(**store, root, webtest::NonfiniteRunSpec()));
  {
    Result<RunRecord> run = (*store)->GetRun(nonfinite);
    if (!run.ok() || !webtest::WriteJobLog(run->run_dir, "3003", webtest::NonfiniteJobLog()).ok()) {
      std::cerr << "baton_web_fixture: cannot write the job log\n";
      return 1;
    }
  }
  nlohmann::json compare_ids = nlohmann::json::array();
  if (compare) {
    webtest::RunSpec high = webtest::DemoRunSpec("compare-lr-high", scale);
    high.base_lr = 1e-4;
    high.partition = "a100";
    high.micro_steps = 4;
    high.loss_scale = 1.3;
    for (webtest::AttemptSpec& a : high.attempts) a.job_id = "6001";
    compare_ids.push_back(check(webtest::CreateRunThroughIngest(**store, root, high)));
    webtest::RunSpec shorter = webtest::DemoRunSpec("compare-short", scale);
    shorter.warmup_steps = 30;
    shorter.loss_scale = 0.7;
    shorter.attempts.resize(1);
    shorter.attempts[0].job_id = "6002";
    shorter.attempts[0].action = "done";
    shorter.attempts[0].reason = "completed";
    shorter.target_steps = shorter.attempts[0].end_step;
    compare_ids.push_back(check(webtest::CreateRunThroughIngest(**store, root, shorter)));
  }
  int64_t big_id = 0;
  if (big > 0) {
    webtest::RunSpec r = webtest::DemoRunSpec("million-demo", big);
    for (webtest::AttemptSpec& a : r.attempts) a.job_id = "7001";
    big_id = check(webtest::CreateRunThroughIngest(**store, root, r));
  }
  webtest::SweepFixture sweep_fixture;
  if (sweep) {
    Result<webtest::SweepFixture> made = webtest::CreateSweepThroughIngest(**store, root);
    if (!made.ok()) {
      std::cerr << "baton_web_fixture: " << made.status().ToString() << "\n";
      return 1;
    }
    sweep_fixture = *made;
  }
  const int64_t xss = check(webtest::CreateRunThroughIngest(
      **store, root, webtest::LiveRunSpec("<script>alert(1)</script>", 40)));
  std::cout << nlohmann::json{{"demo_run_id", demo},
                              {"nonfinite_run_id", nonfinite},
                              {"xss_run_id", xss},
                              {"compare_run_ids", compare_ids},
                              {"big_run_id",
                               big_id > 0 ? nlohmann::json(big_id) : nlohmann::json()},
                              {"sweep_id",
                               sweep ? nlohmann::json(sweep_fixture.sweep_id) : nlohmann::json()},
                              {"sweep_run_ids", sweep_fixture.run_ids},
                              {"runs", extra + 3 + int64_t(compare_ids.size()) + (big_id > 0) +
                                           int64_t(sweep_fixture.run_ids.size())},
                              {"step_rows", (*store)->CountSteps(demo, true).value()}}
                   .dump()
            << std::endl;
  return 0;
}
