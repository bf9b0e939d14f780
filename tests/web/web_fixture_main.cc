// baton_web_fixture: fills $BATON_HOME-style folders with run history for the browser tests and
// the web bench, through the real path (run_fixture.h: event files + IngestRun).
//
//   baton_web_fixture --db DB --runs-root DIR [--scale N] [--extra-runs N]
//
// Creates the demo run (3 attempts, weights-only resume; ×N steps with --scale), a run with
// non-finite (skipped) steps that diverged, a live run named <script>alert(1)</script>, and N
// small completed runs. Prints
// {"demo_run_id":..,"nonfinite_run_id":..,"xss_run_id":..,"runs":..,"step_rows":..} on stdout.
#include <cstdlib>
#include <iostream>
#include <string>

#include "run_fixture.h"

namespace {

int Usage() {
  std::cerr << "usage: baton_web_fixture --db DB --runs-root DIR [--scale N] [--extra-runs N]\n";
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  std::string db, root;
  int64_t scale = 1, extra = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--db")
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
  if (db.empty() || root.empty() || scale < 1 || extra < 0) return Usage();
  using namespace baton;
  Result<std::unique_ptr<Store>> store = Store::Open(db);
  if (!store.ok()) {
    std::cerr << store.status().ToString() << "\n";
    return 1;
  }
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
    r.attempts = {{std::to_string(5000 + i),
                   0,
                   "fresh",
                   0,
                   20,
                   0,
                   {10, 20},
                   "done",
                   "completed",
                   1.6e9 + double(i) * 100}};
    check(webtest::CreateRunThroughIngest(**store, root, r));
  }
  const int64_t demo = check(webtest::CreateRunThroughIngest(
      **store, root, webtest::DemoRunSpec("preempted-demo", scale)));
  const int64_t nonfinite =
      check(webtest::CreateRunThroughIngest(**store, root, webtest::NonfiniteRunSpec()));
  const int64_t xss = check(webtest::CreateRunThroughIngest(
      **store, root, webtest::LiveRunSpec("<script>alert(1)</script>", 40)));
  std::cout << nlohmann::json{{"demo_run_id", demo},
                              {"nonfinite_run_id", nonfinite},
                              {"xss_run_id", xss},
                              {"runs", extra + 3},
                              {"step_rows", (*store)->CountSteps(demo, true).value()}}
                   .dump()
            << std::endl;
  return 0;
}
