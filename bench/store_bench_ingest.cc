// The ingest measurement (store_bench.h): W processes, each one `baton watch` following one run.
// A writer appends a batch of step events to its run's events file (whole lines, one write) and
// runs IngestRun on it, as watch does on each pass; the pass's time, from the start of IngestRun
// to its return (the wait for the write lock, the chunk's transaction with its rollups and
// cursor, the time buckets), is the commit latency. With --kill K, writers 0..K-1 stop in the
// middle of their third chunk (inside its transaction) and tell the parent, which SIGKILLs them
// and starts them again; they go on from what their files hold. At the end every run's rows are
// counted against the step events its file holds.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "orchestrator/ingest/event_ingester.h"
#include "orchestrator/store/store.h"
#include "schema/run_folder.h"
#include "store_bench.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace baton::storebench {

namespace {

constexpr int64_t kKillPass = 2;  // the killed writers' third pass: some chunks are in already

std::string JobOf(int index) { return std::to_string(90000 + index); }
std::string EventsPath(const RunRecord& run, int index) {
  return RunFolder{run.run_dir}.EventsFile(JobOf(index), 0);
}

// One step event as the trainer writes it (docs/events.md).
std::string StepLine(int64_t s) {
  const double x = double(s) * 1e-5;
  const int64_t tokens = 20000 + (s * 7919) % 4000;
  return json{{"type", "step"},
              {"time", 1.7e9 + double(s) * 0.5},
              {"source", "trainer"},
              {"step", s},
              {"lr", 1e-4},
              {"loss", 0.4 + 2.0 / (1 + x)},
              {"loss_video", 0.3 + 1.2 / (1 + x)},
              {"loss_action", 0.1 + 0.8 / (1 + x)},
              {"grad_norm", 0.2 + 1.5 / (1 + 2 * x)},
              {"tokens", tokens},
              {"padded_tokens", tokens / 50},
              {"samples", 16},
              {"valid_frames", 400},
              {"padded_frames", 416},
              {"step_time_s", 0.5},
              {"tokens_per_s", double(tokens) / 0.5},
              {"in_warmup", false},
              {"epoch", s / 1000}}
             .dump() +
         "\n";
}

Result<std::vector<RunRecord>> CreateRuns(Store& store, const IngestArgs& a) {
  std::vector<int64_t> ids;
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    for (int i = 0; i < a.writers; ++i) {
      NewRun n;
      n.name = "ingest-" + std::to_string(i);
      n.config = "run:\n  name: " + n.name + "\n  steps: " + std::to_string(a.rows_per_writer) +
                 "\noptim:\n  lr: 0.0001\n";
      n.run_dir = a.dir + "/pending";
      n.target_steps = a.rows_per_writer;
      BATON_ASSIGN_OR_RETURN(const int64_t id, store.CreateRunInTx(n, 1.7e9));
      BATON_RETURN_IF_ERROR(
          store.SetRunDirInTx(id, a.dir + "/run-" + std::to_string(id), n.config));
      BATON_RETURN_IF_ERROR(store.SetRunJobInTx(id, JobOf(i), 1.7e9));
      ids.push_back(id);
    }
    return Status::Ok();
  }));
  std::vector<RunRecord> runs;
  for (int64_t id : ids) {
    BATON_ASSIGN_OR_RETURN(RunRecord run, store.GetRun(id));
    fs::create_directories(RunFolder{run.run_dir}.EventsDir());
    runs.push_back(std::move(run));
  }
  return runs;
}

struct Pipes {
  int ready = -1;     // the writer says it is ready (one byte)
  int go = -1;        // closed by the parent to start every writer at once
  int notify = -1;    // a writer to be killed names itself here, mid-chunk
  int go_write = -1;  // the parent's end of `go`, closed in each writer so it can see EOF
};

// The child's whole life; returns its exit code.
int Writer(const IngestArgs& a, const RunRecord& run, int index, const Pipes& p, bool restarted) {
  const std::string path = EventsPath(run, index);
  int64_t start = 0;  // step events already in the file (a restarted writer goes on after them)
  if (restarted) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) start += line.find("\"type\":\"step\"") != std::string::npos;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return std::perror(path.c_str()), 1;
  std::vector<std::string> batches;
  for (int64_t s = start; s < a.rows_per_writer; s += a.batch) {
    std::string text =
        s == 0 ? json{{"type", "attempt_start"}, {"time", 1.7e9},      {"source", "launcher"},
                      {"job_id", JobOf(index)},  {"restart_count", 0}, {"nodes", "n1"},
                      {"checkpoint", nullptr},   {"mode", "fresh"},    {"step0", 0},
                      {"resume_warmup_steps", 0}}
                         .dump() +
                     "\n"
               : "";
    for (int64_t k = s; k < std::min(s + a.batch, a.rows_per_writer); ++k) text += StepLine(k);
    batches.push_back(std::move(text));
  }
  Result<std::unique_ptr<Store>> store = Store::Open(a.store);
  if (!store.ok()) return std::fprintf(stderr, "%s\n", store.status().ToString().c_str()), 1;
  if (!restarted) {
    char c = 'r', buf;
    if (::write(p.ready, &c, 1) != 1 || ::read(p.go, &buf, 1) != 0) return 1;
  }
  const bool doomed = !restarted && index < a.kill;
  std::vector<double> latency_ms;
  int64_t pass = 0;
  IngestOptions options;
  options.after_record = [&](int64_t in_chunk) {
    if (!doomed || pass != kKillPass || in_chunk != a.batch / 2) return;
    const char me = static_cast<char>(index);
    if (::write(p.notify, &me, 1) == 1) ::pause();  // SIGKILL comes while the chunk is open
  };
  for (const std::string& text : batches) {
    if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return 1;
    const double t0 = NowSeconds();
    Result<IngestStats> stats = IngestRun(**store, run, options);
    if (!stats.ok()) return std::fprintf(stderr, "%s\n", stats.status().ToString().c_str()), 1;
    latency_ms.push_back(1000 * (NowSeconds() - t0));
    ++pass;
  }
  std::ofstream out(a.dir + "/latency-" + std::to_string(index) + "-" + std::to_string(::getpid()));
  for (double ms : latency_ms) out << ms << "\n";
  return 0;
}

pid_t Spawn(const IngestArgs& a, const RunRecord& run, int index, const Pipes& p, bool restarted) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (p.go_write >= 0) ::close(p.go_write);
    ::_exit(Writer(a, run, index, p, restarted));
  }
  return pid;
}

// Runs every writer to its end, SIGKILLing and restarting the ones that ask. Returns the wall
// seconds from the common start, or -1 when a writer failed; `killed` counts the kills.
double Supervise(const IngestArgs& a, const std::vector<RunRecord>& runs, int* killed) {
  int ready[2], go[2], notify[2];
  if (::pipe(ready) != 0 || ::pipe(go) != 0 || ::pipe(notify) != 0) return -1;
  Pipes p{ready[1], go[0], notify[1], go[1]};
  std::map<pid_t, int> live;  // pid -> writer index
  for (int i = 0; i < a.writers; ++i) live[Spawn(a, runs[size_t(i)], i, p, false)] = i;
  for (int i = 0; i < a.writers; ++i) {
    char c;
    if (::read(ready[0], &c, 1) != 1) return -1;
  }
  const double t0 = NowSeconds();
  ::close(go[1]);  // every writer starts now
  p.go_write = -1;
  bool failed = false;
  while (!live.empty()) {
    pollfd pf{notify[0], POLLIN, 0};
    if (::poll(&pf, 1, 20) == 1) {
      char who;
      if (::read(notify[0], &who, 1) == 1) {
        const int index = who;
        for (const auto& [pid, i] : live) {
          if (i != index) continue;
          ::kill(pid, SIGKILL);
          ::waitpid(pid, nullptr, 0);
          live.erase(pid);
          ++*killed;
          live[Spawn(a, runs[size_t(index)], index, p, true)] = index;
          break;
        }
      }
    }
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0 && live.count(done) != 0) {
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = true;
      live.erase(done);
    }
  }
  const double seconds = NowSeconds() - t0;
  for (int fd : {ready[0], ready[1], go[0], notify[0], notify[1]}) ::close(fd);
  return failed ? -1 : seconds;
}

struct Counts {
  int64_t events = 0, rows = 0, lost = 0, duplicated = 0;
};

// Every run's rows against the step events its file holds: a step event with no row is lost, a
// row beyond one per step event (a second row or a second attempt for the same file) duplicated.
Result<Counts> CountRows(Store& store, const IngestArgs& a, const std::vector<RunRecord>& runs) {
  Counts c;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::set<int64_t> written;
    std::ifstream in(EventsPath(runs[i], int(i)));
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("\"type\":\"step\"") == std::string::npos) continue;
      written.insert(json::parse(line).at("step").get<int64_t>());
    }
    c.events += int64_t(written.size());
    StepQuery q;
    q.include_superseded = true;
    q.limit = 4 * a.rows_per_writer + 16;
    BATON_ASSIGN_OR_RETURN(const std::vector<StepRecord> rows, store.ListSteps(runs[i].id, q));
    BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts,
                           store.ListAttempts(runs[i].id));
    std::set<int64_t> stored;
    for (const StepRecord& r : rows) stored.insert(r.step);
    for (int64_t s : written) c.lost += stored.count(s) == 0;
    c.duplicated += int64_t(rows.size() - stored.size()) + int64_t(attempts.size()) - 1;
    c.rows += int64_t(rows.size());
  }
  return c;
}

}  // namespace

int RunIngest(const IngestArgs& a) {
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "store bench: %s\n", st.ToString().c_str());
    return 1;
  };
  std::vector<RunRecord> runs;
  {
    // Closed before the fork: every writer opens its own connection.
    Result<std::unique_ptr<Store>> store = Store::Open(a.store);
    if (!store.ok()) return fail(store.status());
    Result<std::vector<RunRecord>> made = CreateRuns(**store, a);
    if (!made.ok()) return fail(made.status());
    runs = std::move(*made);
  }
  int killed = 0;
  const double seconds = Supervise(a, runs, &killed);
  if (seconds < 0) return fail(Status::Internal("a writer failed (its error is above)"));
  std::vector<double> latency_ms;
  for (const auto& e : fs::directory_iterator(a.dir)) {
    if (e.path().filename().string().rfind("latency-", 0) != 0) continue;
    std::ifstream in(e.path());
    for (double ms; in >> ms;) latency_ms.push_back(ms);
  }
  Result<std::unique_ptr<Store>> store = Store::Open(a.store);
  if (!store.ok()) return fail(store.status());
  Result<Counts> c = CountRows(**store, a, runs);
  if (!c.ok()) return fail(c.status());
  const double p50 = Quantile(latency_ms, 0.5), p99 = Quantile(latency_ms, 0.99);
  std::printf("%s\n", json{{"writers", a.writers},
                           {"batch", a.batch},
                           {"events", c->events},
                           {"rows", c->rows},
                           {"seconds", seconds},
                           {"rows_per_s", double(c->rows) / seconds},
                           {"passes", latency_ms.size()},
                           {"p50_ms", p50},
                           {"p99_ms", p99},
                           {"killed", killed},
                           {"lost", c->lost},
                           {"duplicated", c->duplicated}}
                          .dump()
                          .c_str());
  return 0;
}

}  // namespace baton::storebench
