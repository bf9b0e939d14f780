#include "orchestrator/http/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <mutex>
#include <vector>

#include "orchestrator/http/action_routes.h"
#include "orchestrator/http/api_error.h"
#include "orchestrator/http/api_routes.h"
#include "orchestrator/http/bounded_server.h"
#include "orchestrator/http/metrics_text.h"
#include "orchestrator/http/request_identity.h"
#include "orchestrator/http/request_params.h"
#include "orchestrator/store/record_json.h"

using nlohmann::json;

namespace baton {

// Turns at the database: API requests beyond kHttpReadConnections wait here, holding only their
// connection thread, instead of opening read connections that may wait on the writer.
class RequestGate {
 public:
  explicit RequestGate(int turns) : free_(turns) {}
  // Holds one turn for its lifetime.
  class Turn {
   public:
    explicit Turn(RequestGate* gate) : gate_(gate) {
      std::unique_lock<std::mutex> lock(gate_->mu_);
      gate_->cv_.wait(lock, [this] { return gate_->free_ > 0; });
      --gate_->free_;
    }
    ~Turn() {
      {
        std::lock_guard<std::mutex> lock(gate_->mu_);
        ++gate_->free_;
      }
      gate_->cv_.notify_one();
    }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    RequestGate* gate_;
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;  // guarded by mu_
};

namespace {

// What the server answers besides 405 (Allow header, and the message of a 405).
constexpr const char* kAllowedMethods = "GET, HEAD";

// The UI may only run its own scripts and talk to its own origin: a run name or config that
// slipped past escaping still could not execute or send data anywhere.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  // DumpJson replaces invalid UTF-8 in a run name or config: it never throws here.
  res.set_content(DumpJson(body), "application/json; charset=utf-8");
}

void SendError(httplib::Response& res, const Status& status) {
  SendJson(res, HttpStatusFor(status.code()), ErrorBody(status));
}

void SendResult(httplib::Response& res, const Result<json>& result) {
  if (!result.ok()) return SendError(res, result.status());
  SendJson(res, 200, result.value());
}

// 405 for every method but GET/HEAD, in the one error shape, with the Allow header.
void SendMethodNotAllowed(const httplib::Request& req, httplib::Response& res) {
  res.set_header("Allow", kAllowedMethods);
  SendJson(res, 405,
           ErrorBody(
               405, "method_not_allowed",
               req.method + " is not allowed: this server is read-only (" + kAllowedMethods + ")"));
}

// True when httplib will read this request's body before routing and can do so within
// kMaxRequestBodyBytes: a body left unread would be parsed as the client's next request on a
// keep-alive connection. A chunked body, or a POST without Content-Length (read until the client
// closes), is never read at all.
bool HasDrainableBody(const httplib::Request& req) {
  const bool reads_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                          req.method == "DELETE";
  return reads_body && req.has_header("Content-Length") && !req.has_header("Transfer-Encoding");
}

// httplib refuses a method it does not know (PROPFIND, FOO) as a malformed request. A request line
// that is well formed apart from that gets the answer every other method gets: 405.
bool IsUnknownMethod(const httplib::Request& req) {
  if (req.method.empty() || req.target.empty() || !req.path.empty()) return false;
  if (req.version != "HTTP/1.1" && req.version != "HTTP/1.0") return false;
  return std::all_of(req.method.begin(), req.method.end(),
                     [](char c) { return (c >= 'A' && c <= 'Z') || c == '-' || c == '_'; });
}

// Whole bodies only: a Range header is ignored, as HTTP allows. httplib would otherwise cut every
// answer — JSON errors included — to the requested bytes and still call it 200. The request is
// httplib's own non-const object, handed to handlers as const.
void IgnoreRange(const httplib::Request& req) { const_cast<httplib::Request&>(req).ranges.clear(); }

// The message for an error httplib answered before any route ran.
std::string LibraryErrorMessage(const httplib::Request& req, int status) {
  switch (status) {
    case 400:
      return "malformed request: the request line or a header could not be parsed (each is "
             "limited to 8192 bytes)";
    case 404:
      return "no such path: " + req.path;
    case 413:
      return "request body over " + std::to_string(kMaxRequestBodyBytes) +
             " bytes; this server is read-only";
    case 414:
      return "request line over 8192 bytes";
    case 416:
      return "malformed Range header";
  }
  return "HTTP " + std::to_string(status);
}

// Compares without an early exit, so response time does not reveal a matching prefix.
bool SameToken(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return diff == 0;
}

// With --auth: answers 401 (or a store error) and returns true when the request has no identity.
// Reads are open to every user with one.
bool RefusedWithoutIdentity(const RequestIdentity& identity, const httplib::Request& req,
                            httplib::Response& res) {
  Result<std::optional<Identity>> who = identity.Identify(req, /*header_only=*/false);
  if (!who.ok()) {
    SendError(res, who.status());
    return true;
  }
  if (*who) return false;
  res.set_header("WWW-Authenticate", "Bearer");
  SendJson(res, 401, ErrorBody(401, "unauthorized", identity.Missing()));
  return true;
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

HttpServer::HttpServer(RunHistoryService* service, ServerOptions options)
    : service_(service),
      options_(std::move(options)),
      static_files_(options_.ui_dir),
      gate_(std::make_unique<RequestGate>(kHttpReadConnections)),
      server_(MakeBoundedServer(kHttpConnectionThreads)) {
  server_->set_read_timeout(kReadTimeoutS);
  server_->set_keep_alive_timeout(kKeepAliveTimeoutS);
  server_->set_write_timeout(kWriteTimeoutS);
  server_->set_payload_max_length(kMaxRequestBodyBytes);
  InstallRoutes();
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::InstallRoutes() {
  httplib::Server& s = *server_;
  s.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                         {"Referrer-Policy", "no-referrer"},
                         {"X-Frame-Options", "DENY"},
                         {"Accept-Ranges", "none"}});

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

  // Every error status goes through here before it is written, ours (already JSON: left alone)
  // and httplib's own, which come with an empty body: a request it could not parse (an unknown
  // method among them), a URI over its limit, a body over ours, a bad Range, no route.
  s.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        IgnoreRange(req);
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 400 && IsUnknownMethod(req)) {
          SendMethodNotAllowed(req, res);
        } else {
          SendJson(res, res.status,
                   ErrorBody(res.status, ErrorCodeFor(res.status),
                             LibraryErrorMessage(req, res.status)));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));

  // Before routing: the method (read-only), then the token for every /api/ request (so unknown
  // routes leak nothing).
  const std::string token = options_.token;
  const RequestIdentity* identity =
      options_.identity != nullptr && options_.identity->enabled() ? options_.identity : nullptr;
  RunActionService* actions = identity != nullptr ? options_.actions : nullptr;
  s.set_pre_routing_handler([=](const httplib::Request& req, httplib::Response& res) {
    IgnoreRange(req);
    // The body first, from the headers alone: one over the limit (or of no stated length) is
    // refused before a byte of it is read, whoever sends it, and the connection is closed.
    const BodyKind body = RequestBody(req);
    if (body == BodyKind::kRefused) {
      CloseAfterResponse();
      res.set_header("Connection", "close");
      SendJson(res, 413,
               ErrorBody(413, "payload_too_large",
                         req.has_header("Transfer-Encoding")
                             ? "a request body without a Content-Length (Transfer-Encoding) is "
                               "not read; this server is read-only"
                             : LibraryErrorMessage(req, 413) + " (refused unread)"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (actions != nullptr && req.method == "POST" && IsActionPath(req.path)) {
      // Answered here, its body unread (action_routes.h).
      if (body == BodyKind::kSmall) {
        CloseAfterResponse();
        res.set_header("Connection", "close");
      }
      AnswerAction(*identity, *actions, req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "GET" && req.method != "HEAD") {
      // httplib reads a small body with a length first, then the catch-all routes below answer
      // 405.
      if (HasDrainableBody(req)) return httplib::Server::HandlerResponse::Unhandled;
      if (body == BodyKind::kSmall) {  // OPTIONS, TRACE...: httplib would not read it
        CloseAfterResponse();
        res.set_header("Connection", "close");
      }
      SendMethodNotAllowed(req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    // httplib never reads the body of a GET or HEAD: answered, then the connection goes.
    if (body == BodyKind::kSmall) {
      CloseAfterResponse();
      res.set_header("Connection", "close");
    }
    // /metrics is data too: authenticated like the API.
    if (req.path.rfind("/api/", 0) != 0 && req.path != "/metrics") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (identity != nullptr) {
      return RefusedWithoutIdentity(*identity, req, res)
                 ? httplib::Server::HandlerResponse::Handled
                 : httplib::Server::HandlerResponse::Unhandled;
    }
    if (token.empty()) return httplib::Server::HandlerResponse::Unhandled;
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

  const std::vector<ApiRoute> routes = ApiRoutes(service_);
  // ?token= is taken on every route where a token may be given (legacy --token, --auth tokens).
  const bool token_param =
      !options_.token.empty() ||
      (options_.identity != nullptr && options_.identity->options().mode == AuthMode::kTokens);
  RequestGate* gate = gate_.get();
  for (const ApiRoute& route : routes) {
    s.Get(route.regex,
          [route, token_param, gate](const httplib::Request& req, httplib::Response& res) {
            if (Status st = CheckQueryParams(req, route, token_param); !st.ok()) {
              return SendError(res, st);
            }
            Result<bool> csv = WantsCsv(req);
            if (!csv.ok()) return SendError(res, csv.status());
            if (*csv && !route.csv) {
              return SendError(
                  res, Status::InvalidArgument(std::string(route.name) + " answers JSON only"));
            }
            RequestGate::Turn turn(gate);
            Result<json> answer = route.handler(req);
            if (!answer.ok() || !*csv) return SendResult(res, answer);
            res.status = 200;
            res.set_header("Cache-Control", "no-store");
            res.set_header("Content-Disposition", "attachment; filename=\"series.csv\"");
            res.set_content(route.csv(*answer), "text/csv; charset=utf-8");
          });
  }
  if (options_.metrics) {
    auto metrics = options_.metrics;
    s.Get("/metrics", [metrics, gate](const httplib::Request&, httplib::Response& res) {
      RequestGate::Turn turn(gate);
      Result<std::string> text = metrics();
      if (!text.ok()) return SendError(res, text.status());
      res.set_header("Cache-Control", "no-store");
      res.set_content(*text, kOpenMetricsType);
    });
  }
  s.Get(R"(/api/.*)", [](const httplib::Request& req, httplib::Response& res) {
    SendJson(res, 404, ErrorBody(404, "not_found", "no API route " + req.path));
  });

  // The UI. Anything that is not a known file is a JSON 404 too (one error shape). Its query
  // string is the page's own (?token=, ?run=): not checked here.
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

  // Methods whose body httplib has drained (HasDrainableBody) arrive here.
  s.Post(R"(.*)", SendMethodNotAllowed);
  s.Put(R"(.*)", SendMethodNotAllowed);
  s.Patch(R"(.*)", SendMethodNotAllowed);
  s.Delete(R"(.*)", SendMethodNotAllowed);
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
