// The history measurement (store_bench.h): a lab's history filled in bulk through the store
// (bulk_steps.h: one statement per run, not one event at a time through files), then the web
// API's own service (RunHistoryService over a StorePool of read connections, as `baton serve`
// answers) timed on the series of the big run (lr,loss and all 9 chart keys, 2000 points a key,
// from its rollups) and on the runs page (the newest 50 runs).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orchestrator/http/run_history_service.h"
#include "orchestrator/http/store_pool.h"
#include "orchestrator/store/bulk_steps.h"
#include "orchestrator/store/store.h"
#include "store_bench.h"

using nlohmann::json;

namespace baton::storebench {

namespace {

constexpr int64_t kRunsPerTransaction = 250;

// One run with one attempt of `rows` step rows; returns its id.
Result<int64_t> AddRunInTx(Store& store, const HistoryArgs& a, int64_t i, int64_t rows,
                           bool rollups) {
  NewRun n;
  n.name = (rollups ? "big-" : "run-") + std::to_string(i);
  n.config = "run:\n  name: " + n.name + "\n  steps: " + std::to_string(rows) +
             "\noptim:\n  lr: 0.0001\n  warmup_steps: 100\n";
  n.run_dir = a.dir + "/run-" + std::to_string(i);
  n.target_steps = rows;
  n.owner = "user" + std::to_string(i % 40);
  n.cluster = i % 2 == 0 ? "alpha" : "beta";
  const double created = 1.6e9 + double(i) * 600;
  BATON_ASSIGN_OR_RETURN(const int64_t id, store.CreateRunInTx(n, created));
  const std::string job = std::to_string(100000 + i);
  BATON_RETURN_IF_ERROR(store.SetRunJobInTx(id, job, created));
  BATON_ASSIGN_OR_RETURN(const int64_t attempt, store.EnsureAttemptInTx(id, job, 0, 0, n.cluster));
  BATON_RETURN_IF_ERROR(BulkInsertStepsInTx(store, id, attempt, 0, rows, rollups));
  if (!rollups) {
    BATON_RETURN_IF_ERROR(
        store.SetRunStatusInTx(id, RunStatus::kCompleted, "", created + double(rows) * 0.5));
  }
  return id;
}

// The background runs, then the big run (the newest). Returns the big run's id.
Result<int64_t> Fill(Store& store, const HistoryArgs& a) {
  const int64_t background = a.runs - 1;
  const int64_t rest = a.rows - a.big_rows;
  for (int64_t first = 0; first < background; first += kRunsPerTransaction) {
    BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
      for (int64_t i = first; i < std::min(first + kRunsPerTransaction, background); ++i) {
        // The rows spread evenly, the remainder on the first runs.
        const int64_t rows = rest / background + (i < rest % background ? 1 : 0);
        BATON_RETURN_IF_ERROR(AddRunInTx(store, a, i, std::max<int64_t>(rows, 1), false).status());
      }
      return Status::Ok();
    }));
  }
  int64_t big = 0;
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(big, AddRunInTx(store, a, background, a.big_rows, true));
    return Status::Ok();
  }));
  return big;
}

// Median milliseconds of `repeats` calls of `call`, after one warm-up; `last` keeps the answer.
template <class Call>
Result<double> MedianMs(int repeats, json* last, Call call) {
  std::vector<double> ms;
  for (int k = 0; k <= repeats; ++k) {
    const double t0 = NowSeconds();
    BATON_ASSIGN_OR_RETURN(*last, call());
    if (k > 0) ms.push_back(1000 * (NowSeconds() - t0));
  }
  return Quantile(ms, 0.5);
}

Result<json> Measure(const HistoryArgs& a, int64_t big) {
  StorePool pool(a.store, 2);
  BATON_RETURN_IF_ERROR(pool.Warm(1));
  RunHistoryService service(&pool, [] { return 1.7e9; });
  SeriesRequest two, nine;
  two.keys = {SeriesKey::kLr, SeriesKey::kLoss};
  for (const char* k : {"lr", "expected_lr", "loss", "loss_video", "loss_action", "grad_norm",
                        "tokens_per_s", "step_time_s", "padding"}) {
    nine.keys.push_back(*Find<SeriesKey>(k));
  }
  json s2, s9, page;
  BATON_ASSIGN_OR_RETURN(const double two_ms,
                         MedianMs(a.repeats, &s2, [&] { return service.GetSeries(big, two); }));
  BATON_ASSIGN_OR_RETURN(const double nine_ms,
                         MedianMs(a.repeats, &s9, [&] { return service.GetSeries(big, nine); }));
  RunListQuery q;
  q.limit = 50;
  BATON_ASSIGN_OR_RETURN(const double page_ms,
                         MedianMs(a.repeats, &page, [&] { return service.ListRuns(q); }));
  return json{{"series2_ms", two_ms},
              {"series9_ms", nine_ms},
              {"runs_page_ms", page_ms},
              {"series_source", s2.value("source", "?")},
              {"series_rows", s2.value("rows", int64_t{0})},
              {"series_points", s2["series"]["loss"].value("points", int64_t{0})},
              {"page_runs", page["runs"].size()},
              {"page_total", page["page"].value("total", int64_t{0})}};
}

}  // namespace

int RunHistory(const HistoryArgs& a) {
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "store bench: %s\n", st.ToString().c_str());
    return 1;
  };
  double fill_s = 0;
  int64_t big = 0;
  {
    Result<std::unique_ptr<Store>> store = Store::Open(a.store);
    if (!store.ok()) return fail(store.status());
    const double t0 = NowSeconds();
    Result<int64_t> made = Fill(**store, a);
    if (!made.ok()) return fail(made.status());
    big = *made;
    fill_s = NowSeconds() - t0;
  }
  Result<json> out = Measure(a, big);
  if (!out.ok()) return fail(out.status());
  (*out)["fill_seconds"] = fill_s;
  (*out)["rows"] = a.rows;
  (*out)["runs"] = a.runs;
  (*out)["big_rows"] = a.big_rows;
  std::printf("%s\n", out->dump().c_str());
  return 0;
}

}  // namespace baton::storebench
