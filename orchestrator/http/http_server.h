// HttpServer: baton's web server — the routes of routes → service → store, on cpp-httplib.
//
//   GET /api/health                       {"ok": true}
//   GET /api/runs?limit&offset&sort&order&status&name&partition&owner&cluster&created_from
//                &created_to
//   GET /api/runs/{id}                    run, timeline segments, audit, config, stop save, time
//   GET /api/runs/{id}/attempts?limit&offset
//   GET /api/runs/{id}/checkpoints?limit&offset
//   GET /api/runs/{id}/actions?limit&offset  the audit of cancel/resume, newest first
//   GET /api/runs/{id}/incidents          incidents and their alert deliveries, newest first
//   GET /api/runs/{id}/incidents          incidents and their alert deliveries, newest first
//   GET /api/runs/{id}/profile            the micro-step profile
//   GET /api/runs/{id}/log?attempt&before&limit
//   GET /api/runs/{id}/series?keys&max_points&superseded&from&to&source&format
//   GET /metrics                          OpenMetrics text (when ServerOptions::metrics is set)
//   GET /<file>                           the UI (StaticFiles)
// (docs/http_api.md; the table is api_routes.cc, its parameters request_params.h). Read-only:
// every other method is 405 with `Allow: GET, HEAD`. Each API route declares the query
// parameters it takes; any other, or one given twice, is a 400 naming it. Every error — a failed
// Status, an exception caught at the boundary, and what httplib answers by itself (a malformed
// request, a URI over its limit, a body over ours, a bad Range, no route) — answers in the one
// JSON error shape (api_error.h). With a token, /api/ requests need
// `Authorization: Bearer <token>` (or `?token=`); the static UI carries no data and needs none.
// With an identity (--auth), /api/ requests need a user's token or the trusted proxy's header
// (401 otherwise), and POST /api/runs/{id}/cancel and /resume act for the run's owner or an
// admin (action_routes.h); every other method is still 405.
//
// Slow clients: a connection holds a thread while it sends its request, so there are many
// more connection threads than requests allowed to query the database at once, and a client
// that goes quiet between bytes, or never sends a request, is dropped after a few seconds. A
// request's line, headers and body are read within fixed bounds, and a body over the limit is
// refused from its headers before a byte of it is read (bounded_server.h).
//
// Owns the httplib::Server; borrows the service. Bind() then Listen() (blocks, serving on a
// thread pool) from one thread; Stop() from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "orchestrator/http/run_history_service.h"
#include "orchestrator/http/static_files.h"
#include "schema/status.h"

namespace httplib {
class Server;
}

namespace baton {

class RequestGate;

class RequestIdentity;
class RunActionService;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;     // 0 = any free port (tests)
  std::string token;   // '' = no token required
  std::string ui_dir;  // '' = the embedded UI
  // --auth tokens|proxy (request_identity.h): every /api/ request needs an identity, and the
  // write routes (action_routes.h) answer. Null, or not enabled: as without --auth. Borrowed.
  const RequestIdentity* identity = nullptr;
  RunActionService* actions = nullptr;  // the write routes; needs `identity`
  // GET /metrics (metrics_text.h), authenticated like /api/; unset: no such route.
  std::function<Result<std::string>()> metrics = nullptr;
};

// Threads that hold client connections. Mostly they wait on slow or idle clients (each for at
// most the read or keep-alive timeout at a time): with 32 of them held by slow clients, as many
// are still free for everyone else.
inline constexpr int kHttpConnectionThreads = 64;
// API requests that query the database at once; the others wait for a turn. Each leases one
// read connection, so a StorePool warmed with this many never opens one while ingestion writes.
inline constexpr int kHttpReadConnections = 8;

// True for 127.0.0.0/8, ::1 and "localhost": the hosts `baton serve` may bind without a token.
bool IsLoopbackHost(const std::string& host);

class HttpServer {
 public:
  HttpServer(RunHistoryService* service, ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port. Code::kUnavailable naming the address when that fails (port in use).
  [[nodiscard]] Status Bind();
  // The bound port (after Bind).
  int port() const { return port_; }
  // Serves until Stop(). Code::kUnavailable when the listener fails.
  [[nodiscard]] Status Listen();
  void Stop();

 private:
  void InstallRoutes();

  RunHistoryService* service_;
  ServerOptions options_;
  StaticFiles static_files_;
  std::unique_ptr<RequestGate> gate_;  // kHttpReadConnections turns at the database
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
};

}  // namespace baton
