#include "orchestrator/http/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <iostream>
#include <mutex>
#include <sstream>
#include <vector>

#include "orchestrator/http/api_error.h"
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

// Seconds a client may pause while sending its request, and an idle connection (no request yet,
// or between keep-alive requests) is kept. Short: each such client holds a connection thread.
constexpr time_t kReadTimeoutS = 5;
constexpr time_t kKeepAliveTimeoutS = 5;
// Seconds a client may take to receive a response (a series can be a few hundred KiB).
constexpr time_t kWriteTimeoutS = 30;
// Bytes of request body read (and dropped) for a method that is refused anyway; larger is 413,
// answered from the headers alone before a byte of the body is read.
constexpr size_t kMaxRequestBodyBytes = 64 * 1024;
// Bytes of request line and headers httplib may read for one request (each line is also held to
// its 8192). Beyond that the stream ends, so the request is refused (400/414) and the connection
// closed: a request line or header without an end never grows a buffer.
constexpr size_t kMaxRequestHeadBytes = 64 * 1024;
// After refusing a request whose body was not read, the connection is closed. Up to this many of
// the body's bytes (or this long) are read and dropped first, so a client still sending a
// modest body gets to read the answer instead of a reset.
constexpr size_t kLingerDrainBytes = 4 << 20;
constexpr int kLingerDrainMs = 1000;
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
  BATON_ASSIGN_OR_RETURN(const int64_t limit,
                         IntParam(req, "limit", default_limit, 1, kMaxPageLimit));
  BATON_ASSIGN_OR_RETURN(const int64_t offset, IntParam(req, "offset", 0, 0, INT64_MAX / 2));
  return PageRequest{limit, offset};
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
  BATON_ASSIGN_OR_RETURN(const PageRequest page, PageParams(req, /*default_limit=*/50));
  q.limit = page.limit;
  q.offset = page.offset;
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
  if (req.has_param("name")) q.name = req.get_param_value("name");
  if (req.has_param("partition")) q.partition = req.get_param_value("partition");
  if (req.has_param("created_from")) {
    BATON_ASSIGN_OR_RETURN(const int64_t t, IntParam(req, "created_from", 0, 0, INT64_MAX / 2));
    q.created_from = double(t);
  }
  if (req.has_param("created_to")) {
    BATON_ASSIGN_OR_RETURN(const int64_t t, IntParam(req, "created_to", 0, 0, INT64_MAX / 2));
    q.created_to = double(t);
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
  BATON_ASSIGN_OR_RETURN(
      r.max_points, IntParam(req, "max_points", r.max_points, kMinSeriesPoints, kMaxSeriesPoints));
  if (req.has_param("superseded")) {
    const std::string v = req.get_param_value("superseded");
    if (v != "0" && v != "1") {
      return Status::InvalidArgument("superseded must be 0 or 1 (got '" + v + "')");
    }
    r.include_superseded = v == "1";
  }
  BATON_ASSIGN_OR_RETURN(r.from_step, IntParam(req, "from", 0, 0, INT64_MAX / 2));
  BATON_ASSIGN_OR_RETURN(r.to_step, IntParam(req, "to", INT64_MAX, 0, INT64_MAX));
  if (r.from_step > r.to_step) {
    return Status::InvalidArgument("from (" + std::to_string(r.from_step) + ") is after to (" +
                                   std::to_string(r.to_step) + ")");
  }
  if (req.has_param("source")) {
    const std::string v = req.get_param_value("source");
    if (v != "auto" && v != "rows") {
      return Status::InvalidArgument("source must be auto or rows (got '" + v + "')");
    }
    r.rows_only = v == "rows";
  }
  return r;
}

// ?format=json (default) or csv.
Result<bool> WantsCsv(const httplib::Request& req) {
  if (!req.has_param("format")) return false;
  const std::string v = req.get_param_value("format");
  if (v != "json" && v != "csv") {
    return Status::InvalidArgument("format must be json or csv (got '" + v + "')");
  }
  return v == "csv";
}

// A number as CSV text: integers exactly, others with 17 significant digits; empty for null.
std::string CsvNumber(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v.get<double>());
    return buf;
  }
  return "";
}

// The series answer as CSV: one line per point, effective then superseded, key by key. Keys
// are the server's own names, so no field needs quoting.
std::string SeriesCsv(const json& answer) {
  std::string out = "key,part,step,value,attempt,tokens,wall_s\n";
  for (const char* part : {"series", "superseded"}) {
    if (!answer.contains(part)) continue;
    const char* label = std::string(part) == "series" ? "effective" : "superseded";
    for (const auto& key : answer["keys"]) {
      const json& p = answer[part][key.get<std::string>()];
      const size_t n = p["step"].size();
      for (size_t i = 0; i < n; ++i) {
        out += key.get<std::string>() + "," + label + "," + CsvNumber(p["step"][i]) + "," +
               CsvNumber(p["value"][i]) + "," + CsvNumber(p["attempt"][i]) + "," +
               CsvNumber(p["tokens"][i]) + "," + CsvNumber(p["wall_s"][i]) + "\n";
      }
    }
  }
  return out;
}

// An API route: its path pattern (as documented), the query parameters it takes, and a handler
// that returns the answer or the failure to answer with.
using ApiHandler = std::function<Result<json>(const httplib::Request&)>;
struct ApiRoute {
  const char* regex;  // httplib pattern over the path; group 1 is the run id where there is one
  const char* name;   // the route as docs/http_api.md writes it, for messages
  std::vector<std::string> params;
  ApiHandler handler;
  // The answer as CSV for ?format=csv; routes without one answer JSON only.
  std::function<std::string(const json&)> csv = nullptr;
};

// kInvalidArgument naming the first query parameter `route` does not take, or one given twice
// (which value would win is a guess; httplib alone would silently take the first). `token` is
// taken everywhere when the server has one.
Status CheckQueryParams(const httplib::Request& req, const ApiRoute& route, bool token_param) {
  for (auto it = req.params.begin(); it != req.params.end();
       it = req.params.upper_bound(it->first)) {
    const std::string& key = it->first;
    const bool known =
        (token_param && key == "token") ||
        std::find(route.params.begin(), route.params.end(), key) != route.params.end();
    if (!known) {
      std::string takes;
      for (const std::string& p : route.params) takes += (takes.empty() ? "" : ", ") + p;
      return Status::InvalidArgument("unknown query parameter '" + key + "' for " + route.name +
                                     " (it takes " + (takes.empty() ? "none" : takes) + ")");
    }
    if (req.params.count(key) > 1) {
      return Status::InvalidArgument("query parameter '" + key + "' is given more than once");
    }
  }
  return Status::Ok();
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

// Set by the pre-routing handler when it answers a request whose body it has not read (or will
// not read): the connection must not be kept, or the body would be parsed as the next request.
// Per thread: each connection is processed on one pool thread from start to end.
thread_local bool t_close_after_response = false;

// An httplib::Stream over the client socket that hands httplib at most `budget` bytes for one
// request (its line, headers and any body httplib reads), then reports the end of the stream.
// Reads through a small buffer, as httplib's own stream does (its line reader asks for one byte
// at a time).
class BoundedStream : public httplib::Stream {
 public:
  BoundedStream(int sock, time_t read_timeout_s, time_t write_timeout_s, size_t budget)
      : sock_(sock),
        read_ms_(int(read_timeout_s * 1000)),
        write_ms_(int(write_timeout_s * 1000)),
        left_(budget) {}

  bool is_readable() const override { return Wait(POLLIN, read_ms_); }
  bool is_writable() const override { return Wait(POLLOUT, write_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (left_ == 0) {
      exhausted_ = true;
      return 0;
    }
    size = std::min(size, left_);
    if (off_ == end_) {
      if (!is_readable()) return -1;
      const ssize_t n = ::recv(sock_, buf_, sizeof buf_, 0);
      if (n <= 0) return n;
      off_ = 0;
      end_ = size_t(n);
    }
    const size_t n = std::min(size, end_ - off_);
    std::memcpy(ptr, buf_ + off_, n);
    off_ += n;
    left_ -= n;
    return ssize_t(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    return ::send(sock_, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(::getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

  // The budget ran out: whatever the client sent beyond it was never read.
  bool exhausted() const { return exhausted_; }

 private:
  bool Wait(short events, int timeout_ms) const {
    pollfd p{sock_, events, 0};
    int n;
    do {
      n = ::poll(&p, 1, timeout_ms);
    } while (n < 0 && errno == EINTR);
    return n > 0 && (p.revents & events) != 0;
  }

  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ip.clear();
    port = 0;
    if (get(sock_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {0};
    if (addr.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
      ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
      ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  int sock_;
  int read_ms_, write_ms_;
  size_t left_;
  bool exhausted_ = false;
  char buf_[4096];
  size_t off_ = 0, end_ = 0;
};

// httplib's server with its connection loop replaced (the one virtual it offers for that): the
// same keep-alive rules, but each request read through a BoundedStream, and the connection
// closed after a request that was cut off or whose body was left unread. cpp-httplib 0.11 reads
// every line of a request into a buffer without limit and parses an unread body as the next
// request; this keeps both bounded.
class BoundedServer : public httplib::Server {
 private:
  bool process_and_close_socket(socket_t sock) override {
    bool ret = false;
    bool linger = false;
    for (size_t count = keep_alive_max_count_; count > 0 && KeepAlive(sock); --count) {
      BoundedStream strm(sock, read_timeout_sec_, write_timeout_sec_,
                         kMaxRequestHeadBytes + kMaxRequestBodyBytes);
      bool connection_closed = false;
      t_close_after_response = false;
      ret = process_request(strm, /*close_connection=*/count == 1, connection_closed, nullptr);
      linger = t_close_after_response || strm.exhausted();
      if (!ret || connection_closed || linger) break;
    }
    t_close_after_response = false;
    if (linger) Drain(sock);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
  }

  // Waits for the client's next request as httplib does, but gives up when the server stops.
  bool KeepAlive(int sock) const {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
    while (svr_sock_ != INVALID_SOCKET) {
      pollfd p{sock, POLLIN, 0};
      const int n = ::poll(&p, 1, 50);
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
      if (std::chrono::steady_clock::now() > deadline) return false;
    }
    return false;
  }

  // Tells the client we are done sending, then reads and drops what it still sends, within
  // kLingerDrainBytes and kLingerDrainMs, so that closing does not reset a connection whose
  // answer the client has not read yet.
  static void Drain(int sock) {
    ::shutdown(sock, SHUT_WR);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kLingerDrainMs);
    char sink[16384];
    size_t drained = 0;
    while (drained < kLingerDrainBytes) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) return;
      pollfd p{sock, POLLIN, 0};
      if (::poll(&p, 1, int(left)) <= 0) return;
      const ssize_t n = ::recv(sock, sink, sizeof sink, 0);
      if (n <= 0) return;
      drained += size_t(n);
    }
  }
};

// The request's body as its headers announce it: none, a Content-Length within our limit, or
// one we will not read (over the limit, not a number, or chunked: no length up front).
enum class BodyKind { kNone, kSmall, kRefused };
BodyKind RequestBody(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return BodyKind::kRefused;
  if (!req.has_header("Content-Length")) return BodyKind::kNone;
  const std::string v = req.get_header_value("Content-Length");
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return BodyKind::kRefused;
  if (n == 0) return BodyKind::kNone;
  return n <= kMaxRequestBodyBytes ? BodyKind::kSmall : BodyKind::kRefused;
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
      server_(std::make_unique<BoundedServer>()) {
  server_->new_task_queue = [] { return new httplib::ThreadPool(kHttpConnectionThreads); };
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
  s.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    IgnoreRange(req);
    // The body first, from the headers alone: one over the limit (or of no stated length) is
    // refused before a byte of it is read, whoever sends it, and the connection is closed.
    const BodyKind body = RequestBody(req);
    if (body == BodyKind::kRefused) {
      t_close_after_response = true;
      res.set_header("Connection", "close");
      SendJson(res, 413,
               ErrorBody(413, "payload_too_large",
                         req.has_header("Transfer-Encoding")
                             ? "a request body without a Content-Length (Transfer-Encoding) is "
                               "not read; this server is read-only"
                             : LibraryErrorMessage(req, 413) + " (refused unread)"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "GET" && req.method != "HEAD") {
      // httplib reads a small body with a length first, then the catch-all routes below answer
      // 405.
      if (HasDrainableBody(req)) return httplib::Server::HandlerResponse::Unhandled;
      if (body == BodyKind::kSmall) {  // OPTIONS, TRACE...: httplib would not read it
        t_close_after_response = true;
        res.set_header("Connection", "close");
      }
      SendMethodNotAllowed(req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    // httplib never reads the body of a GET or HEAD: answered, then the connection goes.
    if (body == BodyKind::kSmall) {
      t_close_after_response = true;
      res.set_header("Connection", "close");
    }
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

  // The API: each route with the query parameters it takes (docs/http_api.md "Endpoints").
  RunHistoryService* svc = service_;
  const std::vector<ApiRoute> routes = {
      {"/api/health",
       "/api/health",
       {},
       [](const httplib::Request&) -> Result<json> {
         return json{{"ok", true}};
       }},
      {"/api/runs",
       "/api/runs",
       {"limit", "offset", "sort", "order", "status", "name", "partition", "created_from",
        "created_to"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const RunListQuery q, RunListParams(req));
         return svc->ListRuns(q);
       }},
      {R"(/api/runs/([^/]+))",
       "/api/runs/{id}",
       {},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         return svc->GetRun(id);
       }},
      {R"(/api/runs/([^/]+)/attempts)",
       "/api/runs/{id}/attempts",
       {"limit", "offset"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         BATON_ASSIGN_OR_RETURN(const PageRequest page, PageParams(req, /*default_limit=*/100));
         return svc->ListAttempts(id, page);
       }},
      {R"(/api/runs/([^/]+)/checkpoints)",
       "/api/runs/{id}/checkpoints",
       {"limit", "offset"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         BATON_ASSIGN_OR_RETURN(const PageRequest page, PageParams(req, /*default_limit=*/100));
         return svc->ListCheckpoints(id, page);
       }},
      {R"(/api/runs/([^/]+)/profile)",
       "/api/runs/{id}/profile",
       {},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         return svc->GetProfile(id);
       }},
      {R"(/api/runs/([^/]+)/log)",
       "/api/runs/{id}/log",
       {"attempt", "before", "limit"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         if (!req.has_param("attempt")) {
           return Status::InvalidArgument("attempt (1-based) is required");
         }
         BATON_ASSIGN_OR_RETURN(const int64_t attempt,
                                IntParam(req, "attempt", 1, 1, INT64_MAX / 2));
         LogPageRequest page;
         if (req.has_param("before")) {
           BATON_ASSIGN_OR_RETURN(page.before, IntParam(req, "before", 0, 0, INT64_MAX / 2));
         }
         BATON_ASSIGN_OR_RETURN(page.limit,
                                IntParam(req, "limit", kDefaultLogPageBytes, 1, kMaxLogPageBytes));
         return svc->GetAttemptLog(id, attempt, page);
       }},
      {R"(/api/runs/([^/]+)/series)",
       "/api/runs/{id}/series",
       {"keys", "max_points", "superseded", "from", "to", "source", "format"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         BATON_ASSIGN_OR_RETURN(const SeriesRequest r, SeriesParams(req));
         return svc->GetSeries(id, r);
       },
       SeriesCsv},
  };
  const bool token_param = !options_.token.empty();
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
