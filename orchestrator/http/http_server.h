// HttpServer: baton's web server — the routes of routes → service → store, on cpp-httplib.
//
//   GET /api/health                       {"ok": true}
//   GET /api/runs?limit&offset&sort&order&status
//   GET /api/runs/{id}                    run, timeline segments, audit, config
//   GET /api/runs/{id}/attempts?limit&offset
//   GET /api/runs/{id}/checkpoints?limit&offset
//   GET /api/runs/{id}/series?keys=lr,loss&max_points=N&superseded=1
//   GET /<file>                           the UI (StaticFiles)
// (docs/http_api.md). Read-only: every other method is 405. Handlers never throw: a failed
// Status and any exception caught at the boundary answer in the one JSON error shape
// (api_error.h). With a token, /api/ requests need `Authorization: Bearer <token>` (or
// `?token=`); the static UI carries no data and needs none.
//
// Owns the httplib::Server; borrows the service. Bind() then Listen() (blocks, serving on a
// thread pool) from one thread; Stop() from any thread.
#pragma once

#include <memory>
#include <string>

#include "orchestrator/http/run_history_service.h"
#include "orchestrator/http/static_files.h"
#include "schema/status.h"

namespace httplib {
class Server;
}

namespace baton {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;     // 0 = any free port (tests)
  std::string token;   // '' = no token required
  std::string ui_dir;  // '' = the embedded UI
};

// Worker threads answering requests; each leases its own read connection, so a StorePool warmed
// with this many never has to open one while ingestion writes.
inline constexpr int kHttpWorkerThreads = 8;

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
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
};

}  // namespace baton
