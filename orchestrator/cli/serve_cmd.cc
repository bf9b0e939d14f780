// `baton serve [--host 127.0.0.1] [--port 8080] [--token T] [--ui-dir DIR] [--interval S]
// [--no-reconcile] [--auth tokens|proxy [--trust-proxy-header H --trusted-proxy ADDR...
// --admin-user U...]]`: the web UI and its JSON API over the run history (docs/http_api.md,
// docs/web_ui.md), plus ingestion and reconciliation in the background so what it shows is
// current. With --auth, every API request needs a user's identity and the run page can cancel
// and resume the user's own runs (docs/team.md, "Identity and write actions").
//
// Threads: the HTTP server's connection threads (an API request leases a read connection from
// a StorePool, at most kHttpReadConnections at once), one sync thread (its own writer
// connection: ingest every active run, then reconcile with SLURM), and one thread waiting for
// SIGINT/SIGTERM to stop both. WAL keeps readers and the writer out of each other's way.
//
// The database deleted or replaced under a running server (rm, or a restore that renames another
// file over it): serve would go on writing into the unlinked file while `baton ls` creates a new,
// empty one, and the history would be gone when serve stops. The sync thread checks the file
// before every pass; on a change serve stops at once with the reason (exit 74) and writes nothing.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "orchestrator/alerts/alert_pass.h"
#include "orchestrator/alerts/node_refusal_alert.h"
#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/http/http_server.h"
#include "orchestrator/http/metrics_text.h"
#include "orchestrator/http/request_identity.h"
#include "orchestrator/http/run_action_service.h"
#include "orchestrator/http/run_history_service.h"
#include "orchestrator/http/store_pool.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/reconcile/job_permission.h"
#include "orchestrator/reconcile/sync_pass.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "orchestrator/store/run_history_queries.h"
#include "orchestrator/store/run_metrics.h"
#include "orchestrator/store/store_spec.h"
#include "orchestrator/store/store_tokens.h"
#include "schema/clock.h"
#include "schema/events.h"

namespace baton {

namespace {

// Read connections opened up front and kept: one per API request the server runs at once.
constexpr size_t kMaxIdleReaders = kHttpReadConnections;
// Environment variable that supplies the token when --token is not given.
constexpr const char* kTokenEnv = "BATON_TOKEN";

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string token;
  std::string ui_dir;
  double interval_s = 5.0;
  bool reconcile = true;
  std::string auth;  // "" | tokens | proxy
  AuthOptions auth_options;
};

// Stops the sync loop promptly instead of at the end of its sleep.
class StopFlag {
 public:
  void Set() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  // Sleeps up to `s` seconds; true when stopped meanwhile.
  bool WaitFor(double s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(static_cast<int64_t>(s * 1000)),
                        [&] { return stopped_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

// One sync pass (sync_pass.h). `all_runs` also ingests finished runs (the first pass: lines
// written after the last CLI call). Problems are warnings: the UI keeps serving what it has, and
// a pass that failed outright is tried again at the next interval.
// Other users' jobs are left to their own watch or serve (job_permission.h); each "not yours"
// line is printed once (`shown`).
Status ServeSyncPass(Store& store, SlurmClient* slurm, bool all_runs, const ActingUser& me,
                     const NodeLedgerConfig& nodes, const EvalJobOptions& evals,
                     std::set<std::string>* shown) {
  BATON_ASSIGN_OR_RETURN(const std::vector<RunRecord> runs,
                         all_runs ? store.ListRuns(1 << 30) : store.ListActiveRuns());
  SyncOptions options{slurm, /*continue_after_ingest_error=*/true,
                      /*follow_up_ended_runs=*/true,
                      /*release_requeue_holds=*/true};
  options.acting_user = &me;
  options.nodes = &nodes;
  options.eval_jobs = &evals;
  BATON_ASSIGN_OR_RETURN(SyncReport pass, SyncRuns(store, runs, options, UnixTimeNow()));
  std::vector<std::string> changes;
  for (const std::string& c : pass.changes) {
    if (c.find(": not yours") == std::string::npos || shown->insert(c).second) changes.push_back(c);
  }
  pass.changes = std::move(changes);
  for (const std::string& w : pass.ingested.warnings) {
    std::cerr << "baton serve: warning: " << w << "\n";
  }
  for (const std::string& c : pass.changes) std::cout << c << std::endl;
  if (!pass.eval_jobs.ok()) {
    std::cerr << "baton serve: warning: eval jobs: " << pass.eval_jobs.ToString() << "\n";
  }
  if (!pass.reconcile.ok()) {
    std::cerr << "baton serve: warning: status may be stale: " << pass.reconcile.ToString() << "\n";
  }
  return Status::Ok();
}

// Incidents after the sync pass (alert_pass.h); a failed pass is a warning, tried again next time.
void ServeAlertsPass(Store& store, const AlertsSection& lab) {
  Result<AlertPassReport> alerts = AlertPass(store, lab, UnixTimeNow());
  if (!alerts.ok()) {
    std::cerr << "baton serve: warning: alerts: " << alerts.status().ToString() << "\n";
    return;
  }
  for (const std::string& line : alerts->lines) std::cout << line << std::endl;
}

// GET /metrics: the runs' figures from a read connection, serve's own under their lock.
std::function<Result<std::string>()> MetricsSource(StorePool* pool, std::mutex* mu,
                                                   const ServeFigures* figures) {
  return [=]() -> Result<std::string> {
    BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool->Acquire());
    BATON_ASSIGN_OR_RETURN(const std::vector<RunMetrics> runs,
                           ReadRunMetrics(lease.store(), kMetricsRecentEndedRuns));
    std::lock_guard<std::mutex> lock(*mu);
    return MetricsText(runs, *figures, UnixTimeNow());
  };
}

// Fills in what the command line leaves to the environment (the token), and refuses an unknown
// --auth and a server other machines could reach with no token or identities.
Status ResolveServeOptions(ServeOptions* o) {
  if (o->token.empty()) {
    if (const char* env = std::getenv(kTokenEnv)) o->token = env;
  }
  if (!o->auth.empty()) {
    const std::optional<AuthMode> mode = ParseAuthMode(o->auth);
    if (!mode) return Status::InvalidArgument("--auth '" + o->auth + "': expected tokens or proxy");
    o->auth_options.mode = *mode;
  }
  BATON_RETURN_IF_ERROR(CheckAuthOptions(o->auth_options));
  if (!IsLoopbackHost(o->host) && o->token.empty() && o->auth_options.mode == AuthMode::kNone) {
    return Status::InvalidArgument(
        "--host " + o->host + " is reachable from other machines: give --token T (or set " +
        kTokenEnv + "), or --auth tokens|proxy, so the API is not open to everyone");
  }
  return Status::Ok();
}

// --auth tokens with no token in the store locks every user out: said once, at start.
void WarnIfNoTokens(Store& store, const AuthOptions& auth) {
  if (auth.mode != AuthMode::kTokens) return;
  Result<std::vector<ApiTokenInfo>> tokens = ListApiTokens(store);
  if (tokens.ok() && tokens->empty()) {
    std::cerr << "baton serve: warning: --auth tokens, but no user has a token yet: every API "
                 "request is 401 until `baton token add USER`\n";
  }
}

// Blocks SIGINT and SIGTERM in this thread, and so in every thread started after: only the
// waiting thread takes them (sigwait). Returns the set it waits on.
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// What the sync thread shares with the rest of serve. All of it is RunServe's, which joins the
// thread before any of it goes.
struct SyncThreadContext {
  Store* writer;  // the thread's own connection
  const AlertsSection* lab_alerts;
  const NodeLedgerConfig* nodes;
  bool reconcile;
  double interval_s;
  HttpServer* server;
  StopFlag* stop;
  const std::atomic<bool>* listen_returned;
  std::mutex* figures_mu;  // guards *figures, which /metrics reads
  ServeFigures* figures;
  Status* lost_store;  // written before the thread stops the server, read after the join
};

// Whose jobs the sync passes may act on: the user as SLURM's config names users, when serve
// asks SLURM at all.
ActingUser SyncActingUser(SlurmClient* slurm) {
  std::map<std::string, std::string> slurm_config;
  if (slurm) {
    Result<std::map<std::string, std::string>> c = slurm->ShowConfig();
    if (c.ok()) slurm_config = std::move(c).value();
  }
  return CurrentActingUser(slurm_config);
}

// The database is no longer the file at its path: record why, and stop the server.
void StopOnLostStore(const SyncThreadContext& c, const Status& st) {
  *c.lost_store = st.Annotate("baton serve stopped");
  // Stop() before the listener runs does nothing: repeat until Listen() has returned.
  while (!c.listen_returned->load()) {
    c.server->Stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The sync thread: ingest, reconcile and alerts every interval until stopped, or until the
// database has gone from under serve (then nothing more is written).
void RunSyncLoop(const SyncThreadContext& c) {
  std::unique_ptr<SlurmClient> slurm;
  if (c.reconcile) slurm = MakeSlurmClient(kQuerySlurmTimeoutS);
  const ActingUser me = SyncActingUser(slurm.get());
  const EvalJobOptions evals = WatcherEvalJobs(me, *c.lab_alerts);
  std::set<std::string> shown;
  bool first = true;
  do {
    if (Status st = c.writer->CheckStillAtPath(); !st.ok()) {
      StopOnLostStore(c, st);
      return;
    }
    const double pass_start = UnixTimeNow();
    if (Status st = ServeSyncPass(*c.writer, slurm.get(), first, me, *c.nodes, evals, &shown);
        !st.ok()) {
      std::cerr << "baton serve: warning: " << st.ToString() << "\n";
    }
    ServeAlertsPass(*c.writer, *c.lab_alerts);
    ReleaseReadSnapshot(*c.writer);  // no stale snapshot between passes
    {
      std::lock_guard<std::mutex> lock(*c.figures_mu);
      c.figures->last_pass_end = UnixTimeNow();
      c.figures->last_pass_s = c.figures->last_pass_end - pass_start;
    }
    first = false;
  } while (!c.stop->WaitFor(c.interval_s));
}

// The signal thread: the first SIGINT or SIGTERM stops the sync loop and the server, unless
// RunServe is already ending (`stopping`), whose own SIGTERM only wakes this thread to return.
void WaitForStopSignal(const sigset_t* stop_signals, std::atomic<bool>* stopping, StopFlag* stop,
                       HttpServer* server) {
  int sig = 0;
  sigwait(stop_signals, &sig);
  if (stopping->exchange(true)) return;
  std::cerr << "baton serve: stopping (" << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ")\n";
  stop->Set();
  server->Stop();
}

int RunServe(ServeOptions o) {
  if (Status st = ResolveServeOptions(&o); !st.ok()) return ReportError(st);
  Result<AlertsSection> lab_alerts = LoadLabAlertRules();
  if (!lab_alerts.ok()) return ReportError(lab_alerts.status());
  // The node policy (docs/nodes.md): a pattern that does not compile is 78, named, at start.
  Result<NodeLedgerConfig> nodes = LoadNodeLedgerConfig(NodePolicyPath());
  if (!nodes.ok()) return ReportError(nodes.status());
  nodes->on_refusal = CannotExcludeHook(*lab_alerts);  // the cap's refusals reach the sinks
  // The writer connection creates and migrates the database before any reader opens it.
  Result<std::unique_ptr<Store>> writer = OpenDefaultStore();
  if (!writer.ok()) return ReportError(writer.status());

  StorePool pool(DefaultDbPath(), kMaxIdleReaders);
  // Before the sync thread writes: opening a reader later could wait on its write lock.
  if (Status st = pool.Warm(kMaxIdleReaders); !st.ok()) return ReportError(st);
  WarnIfNoTokens(**writer, o.auth_options);
  RunHistoryService service(&pool, [] { return UnixTimeNow(); });
  RequestIdentity identity(o.auth_options, &pool);
  std::unique_ptr<SlurmClient> action_slurm = MakeSlurmClient(kQuerySlurmTimeoutS);
  RunActionService actions(RunActionDeps{[] { return Store::Open(DefaultDbPath()); },
                                         action_slurm.get(), SelfPath(), FindTrainerBinary(),
                                         [] { return UnixTimeNow(); }});
  ServerOptions server_options{o.host, o.port, o.token, o.ui_dir};
  std::mutex figures_mu;  // the sync thread writes serve's own figures, /metrics reads them
  ServeFigures figures;
  server_options.metrics = MetricsSource(&pool, &figures_mu, &figures);
  if (o.auth_options.mode != AuthMode::kNone) {  // identities: the run page's write actions
    service.set_write_actions(true);
    server_options.identity = &identity;
    server_options.actions = &actions;
  }
  HttpServer server(&service, server_options);

  const sigset_t stop_signals = BlockStopSignals();
  if (Status st = server.Bind(); !st.ok()) return ReportError(st);
  std::cout << "baton serve: http://" << o.host << ":" << server.port() << "/ (database "
            << ScrubPassword(DefaultDbPath()) << ")" << std::endl;

  StopFlag stop;
  Status lost_store;
  std::atomic<bool> listen_returned{false};
  const SyncThreadContext sync_context{
      writer->get(), &*lab_alerts, &*nodes,           // what a pass reads and writes
      o.reconcile,   o.interval_s,                    // the options it runs with
      &server,       &stop,        &listen_returned,  // how it stops, and stops the server
      &figures_mu,   &figures,     &lost_store};      // what it reports
  std::thread sync(RunSyncLoop, sync_context);
  std::atomic<bool> stopping{false};
  std::thread waiter(WaitForStopSignal, &stop_signals, &stopping, &stop, &server);

  // The outbox from its own thread and connection: a dead receiver never holds up ingest.
  AlertDelivery delivery(DefaultDbPath(), std::min(1.0, o.interval_s), [](const std::string& line) {
    std::cerr << "baton serve: " << line << std::endl;
  });
  delivery.Start();
  Status st = server.Listen();
  listen_returned = true;
  stop.Set();
  sync.join();
  delivery.Stop();
  if (!stopping.exchange(true)) pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  if (!lost_store.ok()) return ReportError(lost_store);
  return st.ok() ? 0 : ReportError(st);
}

}  // namespace

void AddServeCommand(CLI::App& app, int* rc) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve the web UI and JSON API; ingest and reconcile in the background");
  cmd->add_option("--host", o->host, "Address to bind (default 127.0.0.1; others need a token)");
  cmd->add_option("--port", o->port, "Port (default 8080; 0 = any free port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--token", o->token,
                  std::string("Token the API requires (default $") + kTokenEnv + ")");
  cmd->add_option("--ui-dir", o->ui_dir, "Serve the UI from this folder (development)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--interval", o->interval_s, "Seconds between ingest passes (default 5)")
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_flag("--no-reconcile{false}", o->reconcile, "Do not ask SLURM about job states");
  cmd->add_option("--auth", o->auth,
                  "Identities: tokens (baton token add) or proxy (a trusted proxy's header); "
                  "enables cancel and resume from the run page");
  cmd->add_option("--trust-proxy-header", o->auth_options.proxy_header,
                  "With --auth proxy: the header holding the user (e.g. X-Remote-User)");
  cmd->add_option("--trusted-proxy", o->auth_options.trusted_proxies,
                  "With --auth proxy: peer addresses whose header is honoured")
      ->expected(1, -1);
  cmd->add_option("--admin-user", o->auth_options.admin_users,
                  "With --auth proxy: users who may act on every run")
      ->expected(1, -1);
  cmd->callback([o, rc] { *rc = RunServe(*o); });
}

}  // namespace baton
