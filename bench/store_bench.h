// baton-bench-store: the store bench's two measurements, each printing one JSON line that
// bench/store_bench.sh turns into its figures, on whichever backend BATON_STORE-style `--store`
// names (a SQLite file or a PostgreSQL URI).
//   ingest   W ingester processes, each following its own run's growing events file the way
//            `baton watch` does (append a batch of step events, IngestRun), with the series
//            rollups on; optionally K of them SIGKILLed mid-chunk and restarted, then every
//            run's rows counted against the events written (store_bench_ingest.cc)
//   history  a history of N runs and T step rows (one run of M rows) filled in bulk through the
//            store, then the series endpoint and the runs page timed through the web API's own
//            service (store_bench_history.cc)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace baton::storebench {

struct IngestArgs {
  std::string store;  // sqlite:PATH or postgresql://...
  std::string dir;    // run folders and per-writer figures go here
  int writers = 1;
  int64_t rows_per_writer = 200000;
  int64_t batch = 1000;  // step events appended (and ingested) per pass
  int kill = 0;          // writers SIGKILLed mid-chunk and restarted
};

struct HistoryArgs {
  std::string store;
  std::string dir;
  int64_t runs = 10000;
  int64_t rows = 20000000;     // step rows stored in all
  int64_t big_rows = 1000000;  // of which the run the series is read from
  int repeats = 10;            // timed requests of each kind, after one warm-up
};

// Both return the process exit code; failures are printed on stderr.
int RunIngest(const IngestArgs& args);
int RunHistory(const HistoryArgs& args);

// Seconds on a monotonic clock.
double NowSeconds();
// The value at fraction q (0..1) of `values` (sorted in place), 0 when empty.
double Quantile(std::vector<double>& values, double q);

}  // namespace baton::storebench
