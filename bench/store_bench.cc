// baton-bench-store's command line (store_bench.h); bench/store_bench.sh runs it.
//   baton-bench-store ingest --store S --dir D [--writers W] [--rows R] [--batch B] [--kill K]
//   baton-bench-store history --store S --dir D [--runs N] [--rows T] [--big-rows M]
//                             [--repeats K]
#include "store_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace baton::storebench {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t i = std::min(values.size() - 1, static_cast<size_t>(q * double(values.size())));
  return values[i];
}

}  // namespace baton::storebench

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: baton-bench-store ingest --store S --dir D [--writers W] [--rows R] "
               "[--batch B] [--kill K]\n"
               "       baton-bench-store history --store S --dir D [--runs N] [--rows T] "
               "[--big-rows M] [--repeats K]\n");
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string command = argv[1];
  std::map<std::string, std::string> flags;
  for (int i = 2; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  if (argc % 2 != 0 || flags["--store"].empty() || flags["--dir"].empty()) return Usage();
  auto num = [&](const char* flag, int64_t fallback) {
    auto it = flags.find(flag);
    return it == flags.end() ? fallback : std::atoll(it->second.c_str());
  };
  if (command == "ingest") {
    baton::storebench::IngestArgs a;
    a.store = flags["--store"];
    a.dir = flags["--dir"];
    a.writers = static_cast<int>(num("--writers", a.writers));
    a.rows_per_writer = num("--rows", a.rows_per_writer);
    a.batch = num("--batch", a.batch);
    a.kill = static_cast<int>(num("--kill", a.kill));
    if (a.writers < 1 || a.rows_per_writer < 1 || a.batch < 2 || a.kill < 0 || a.kill > a.writers) {
      return Usage();
    }
    return baton::storebench::RunIngest(a);
  }
  if (command == "history") {
    baton::storebench::HistoryArgs a;
    a.store = flags["--store"];
    a.dir = flags["--dir"];
    a.runs = num("--runs", a.runs);
    a.rows = num("--rows", a.rows);
    a.big_rows = num("--big-rows", a.big_rows);
    a.repeats = static_cast<int>(num("--repeats", a.repeats));
    if (a.runs < 2 || a.big_rows < 1 || a.rows < a.big_rows || a.repeats < 1) return Usage();
    return baton::storebench::RunHistory(a);
  }
  return Usage();
}
