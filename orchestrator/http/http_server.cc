#include "orchestrator/http/http_server.h"

#include <httplib.h>

#include <charconv>
#include <iostream>
#include <sstream>

#include "orchestrator/http/api_error.h"

using nlohmann::json;

namespace baton {

namespace {

// Seconds a client may take to send a request / receive a response.
constexpr time_t kSocketTimeoutS = 30;

// The UI may only run its own scripts and talk to its own origin: a run name or config that
// slipped past escaping still could not execute or send data anywhere.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  // error_handler_t::replace: invalid UTF-8 in a run name or config never throws here.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json; charset=utf-8");
}

void SendError(httplib::Response& res, const Status& status) {
  SendJson(res, HttpStatusFor(status.code()), ErrorBody(status));
}

void SendResult(httplib::Response& res, const Result<json>& result) {
  if (!result.ok()) return SendError(res, result.status());
  SendJson(res, 200, result.value());
}

// A non-negative integer query parameter; `fallback` when absent.
Result<int64_t> IntParam(const httplib::Request& req, const char* name, int64_t fallback,
                         int64_t lo, int64_t hi) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || out < lo || out > hi) {
    return Status::InvalidArgument(std::string("query parameter ") + name +
                                   " must be an integer in [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "] (got '" + v + "')");
  }
  return out;
}

Result<PageRequest> PageParams(const httplib::Request& req, int64_t default_limit) {
  Result<int64_t> limit = IntParam(req, "limit", default_limit, 1, kMaxPageLimit);
  if (!limit.ok()) return limit.status();
  Result<int64_t> offset = IntParam(req, "offset", 0, 0, INT64_MAX / 2);
  if (!offset.ok()) return offset.status();
  return PageRequest{*limit, *offset};
}

// The {id} of /api/runs/{id}/...; kNotFound when it is not a run id at all.
Result<int64_t> RunIdParam(const httplib::Request& req) {
  const std::string v = req.matches.size() > 1 ? std::string(req.matches[1]) : "";
  int64_t id = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
  if (ec != std::errc() || end != v.data() + v.size()) {
    return Status::NotFound("no run with id " + v);
  }
  return id;
}

Result<RunListQuery> RunListParams(const httplib::Request& req) {
  RunListQuery q;
  Result<PageRequest> page = PageParams(req, /*default_limit=*/50);
  if (!page.ok()) return page.status();
  q.limit = page->limit;
  q.offset = page->offset;
  if (req.has_param("sort")) {
    std::optional<RunSortKey> key = ParseRunSortKey(req.get_param_value("sort"));
    if (!key) {
      return Status::InvalidArgument("unknown sort key '" + req.get_param_value("sort") +
                                     "' (created, id, name, status, progress, last_loss, "
                                     "last_lr, updated)");
    }
    q.sort = *key;
  }
  if (req.has_param("order")) {
    const std::string o = req.get_param_value("order");
    if (o != "asc" && o != "desc") {
      return Status::InvalidArgument("order must be asc or desc (got '" + o + "')");
    }
    q.descending = o == "desc";
  }
  if (req.has_param("status")) {
    q.status = req.get_param_value("status");
    if (!ParseRunStatus(q.status)) {
      return Status::InvalidArgument("unknown status '" + q.status + "'");
    }
  }
  return q;
}

Result<SeriesRequest> SeriesParams(const httplib::Request& req) {
  SeriesRequest r;
  const std::string keys = req.has_param("keys") ? req.get_param_value("keys") : "lr,loss";
  std::stringstream in(keys);
  std::string key;
  while (std::getline(in, key, ',')) {
    if (key.empty()) continue;
    const auto& known = SeriesKeys();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return Status::InvalidArgument("unknown series key '" + key + "' (" + list + ")");
    }
    if (std::find(r.keys.begin(), r.keys.end(), key) == r.keys.end()) r.keys.push_back(key);
  }
  if (r.keys.empty()) return Status::InvalidArgument("keys must name at least one series");
  Result<int64_t> max_points =
      IntParam(req, "max_points", r.max_points, kMinSeriesPoints, kMaxSeriesPoints);
  if (!max_points.ok()) return max_points.status();
  r.max_points = *max_points;
  if (req.has_param("superseded")) {
    const std::string v = req.get_param_value("superseded");
    if (v != "0" && v != "1") {
      return Status::InvalidArgument("superseded must be 0 or 1 (got '" + v + "')");
    }
    r.include_superseded = v == "1";
  }
  return r;
}

// Compares without an early exit, so response time does not reveal a matching prefix.
bool SameToken(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return diff == 0;
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

HttpServer::HttpServer(RunHistoryService* service, ServerOptions options)
    : service_(service),
      options_(std::move(options)),
      static_files_(options_.ui_dir),
      server_(std::make_unique<httplib::Server>()) {
  server_->new_task_queue = [] { return new httplib::ThreadPool(kHttpWorkerThreads); };
  server_->set_read_timeout(kSocketTimeoutS);
  server_->set_write_timeout(kSocketTimeoutS);
  InstallRoutes();
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::InstallRoutes() {
  httplib::Server& s = *server_;
  s.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                         {"Referrer-Policy", "no-referrer"},
                         {"X-Frame-Options", "DENY"}});

  // The boundary: nothing below may throw out of a handler.
  s.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        std::cerr << "baton serve: internal error on " << req.path << ": " << what << "\n";
        SendJson(res, 500, ErrorBody(500, "internal", "internal error: " + what));
      });

  // Token check for every /api/ request (before routing, so unknown routes leak nothing).
  const std::string token = options_.token;
  s.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    if (token.empty() || req.path.rfind("/api/", 0) != 0) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    std::string given = req.has_param("token") ? req.get_param_value("token") : "";
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
    if (SameToken(given, token)) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    SendJson(res, 401,
             ErrorBody(401, "unauthorized",
                       "this server needs a token: Authorization: Bearer <token> or ?token="));
    return httplib::Server::HandlerResponse::Handled;
  });

  RunHistoryService* svc = service_;
  s.Get("/api/health", [](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, {{"ok", true}});
  });
  s.Get("/api/runs", [svc](const httplib::Request& req, httplib::Response& res) {
    Result<RunListQuery> q = RunListParams(req);
    if (!q.ok()) return SendError(res, q.status());
    SendResult(res, svc->ListRuns(*q));
  });
  s.Get(R"(/api/runs/([^/]+))", [svc](const httplib::Request& req, httplib::Response& res) {
    Result<int64_t> id = RunIdParam(req);
    if (!id.ok()) return SendError(res, id.status());
    SendResult(res, svc->GetRun(*id));
  });
  s.Get(R"(/api/runs/([^/]+)/attempts)",
        [svc](const httplib::Request& req, httplib::Response& res) {
          Result<int64_t> id = RunIdParam(req);
          if (!id.ok()) return SendError(res, id.status());
          Result<PageRequest> page = PageParams(req, /*default_limit=*/100);
          if (!page.ok()) return SendError(res, page.status());
          SendResult(res, svc->ListAttempts(*id, *page));
        });
  s.Get(R"(/api/runs/([^/]+)/checkpoints)",
        [svc](const httplib::Request& req, httplib::Response& res) {
          Result<int64_t> id = RunIdParam(req);
          if (!id.ok()) return SendError(res, id.status());
          Result<PageRequest> page = PageParams(req, /*default_limit=*/100);
          if (!page.ok()) return SendError(res, page.status());
          SendResult(res, svc->ListCheckpoints(*id, *page));
        });
  s.Get(R"(/api/runs/([^/]+)/series)", [svc](const httplib::Request& req, httplib::Response& res) {
    Result<int64_t> id = RunIdParam(req);
    if (!id.ok()) return SendError(res, id.status());
    Result<SeriesRequest> r = SeriesParams(req);
    if (!r.ok()) return SendError(res, r.status());
    SendResult(res, svc->GetSeries(*id, *r));
  });
  s.Get(R"(/api/.*)", [](const httplib::Request& req, httplib::Response& res) {
    SendJson(res, 404, ErrorBody(404, "not_found", "no API route " + req.path));
  });

  // The UI. Anything that is not a known file is a JSON 404 too (one error shape).
  const StaticFiles* files = &static_files_;
  s.Get(R"(/.*)", [files](const httplib::Request& req, httplib::Response& res) {
    Result<StaticFile> f = files->Find(req.path);
    if (!f.ok()) {
      const Status st = f.status().code() == Code::kInvalidArgument
                            ? Status::NotFound("no such file: " + req.path)
                            : f.status();
      return SendError(res, st);
    }
    res.set_header("Content-Security-Policy", kContentSecurityPolicy);
    res.set_header("Cache-Control", "no-cache");
    res.set_content(std::move(f->body), f->content_type.c_str());
  });

  // Read-only: say so in the one error shape for every other method.
  auto not_allowed = [](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Allow", "GET, HEAD");
    SendJson(res, 405,
             ErrorBody(405, "method_not_allowed", req.method + " is not allowed: read-only"));
  };
  s.Post(R"(/.*)", not_allowed);
  s.Put(R"(/.*)", not_allowed);
  s.Patch(R"(/.*)", not_allowed);
  s.Delete(R"(/.*)", not_allowed);
}

Status HttpServer::Bind() {
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
    if (port_ <= 0) return Status::Unavailable("cannot bind " + where);
  } else {
    if (!server_->bind_to_port(options_.host, options_.port)) {
      return Status::Unavailable("cannot bind " + where + " (address in use or not local?)");
    }
    port_ = options_.port;
  }
  return Status::Ok();
}

Status HttpServer::Listen() {
  if (!server_->listen_after_bind()) {
    return Status::Unavailable("the HTTP listener on port " + std::to_string(port_) + " stopped");
  }
  return Status::Ok();
}

void HttpServer::Stop() {
  if (server_) server_->stop();
}

}  // namespace baton
