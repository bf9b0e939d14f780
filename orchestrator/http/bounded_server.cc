#include "orchestrator/http/bounded_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace baton {

namespace {

// Set by CloseAfterResponse; per thread: each connection is processed on one pool thread from
// start to end.
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
        left_(budget),
        read_deadline_(std::chrono::steady_clock::now() + std::chrono::seconds(kRequestTimeoutS)) {}

  // Each read waits at most the read timeout, and never past the request's deadline.
  bool is_readable() const override {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          read_deadline_ - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return false;
    return Wait(POLLIN, int(std::min<int64_t>(read_ms_, left)));
  }
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
  std::chrono::steady_clock::time_point read_deadline_;
  bool exhausted_ = false;
  char buf_[4096];
  size_t off_ = 0, end_ = 0;
};

// httplib's thread pool, counting the tasks (accepted connections) not yet on a thread.
class CountingPool : public httplib::TaskQueue {
 public:
  CountingPool(int threads, std::atomic<int>* waiting)
      : pool_(size_t(threads)), waiting_(waiting) {}
  void enqueue(std::function<void()> fn) override {
    ++*waiting_;
    pool_.enqueue([fn = std::move(fn), waiting = waiting_] {
      --*waiting;
      fn();
    });
  }
  void shutdown() override { pool_.shutdown(); }

 private:
  httplib::ThreadPool pool_;
  std::atomic<int>* waiting_;
};

// The connections being served, per client address. A client holds at most
// kMaxConnectionsPerClient: a newer connection takes the place of its oldest idle one (asked to
// close: KeepAlive sees `evict`), and is refused only when every one of them is mid-request.
class ConnectionRegistry {
 public:
  struct Connection {
    explicit Connection(std::string address) : client(std::move(address)) {}
    std::string client;
    bool idle = false;               // waiting for a request (guarded by the registry)
    uint64_t idle_since = 0;         // order in which connections became idle
    std::atomic<bool> evict{false};  // asked to close once idle
  };

  // Registered for as long as it lives; ok() false when the client is at its cap with no idle
  // connection to give way.
  class Admission {
   public:
    Admission(ConnectionRegistry& r, Connection* c) : r_(r), c_(c), ok_(r.Admit(c)) {}
    ~Admission() {
      if (ok_) r_.Remove(c_);
    }
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;
    bool ok() const { return ok_; }

   private:
    ConnectionRegistry& r_;
    Connection* c_;
    bool ok_;
  };

  void SetIdle(Connection* c, bool idle) {
    std::lock_guard<std::mutex> lock(mu_);
    c->idle = idle;
    if (idle) c->idle_since = ++clock_;
  }

 private:
  bool Admit(Connection* c) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Connection*>& mine = clients_[c->client];
    if (int(mine.size()) >= kMaxConnectionsPerClient) {
      Connection* oldest = nullptr;
      for (Connection* o : mine) {
        if (o->idle && !o->evict && (!oldest || o->idle_since < oldest->idle_since)) oldest = o;
      }
      if (!oldest) {
        if (mine.empty()) clients_.erase(c->client);
        return false;
      }
      oldest->evict = true;
    }
    mine.push_back(c);
    return true;
  }
  void Remove(Connection* c) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Connection*>& mine = clients_[c->client];
    mine.erase(std::remove(mine.begin(), mine.end(), c), mine.end());
    if (mine.empty()) clients_.erase(c->client);
  }

  std::mutex mu_;
  uint64_t clock_ = 0;
  std::map<std::string, std::vector<Connection*>> clients_;
};

// httplib's server with its connection loop replaced (the one virtual it offers for that): the
// same keep-alive rules, but each request read through a BoundedStream, and the connection
// closed after a request that was cut off or whose body was left unread. cpp-httplib 0.11 reads
// every line of a request into a buffer without limit and parses an unread body as the next
// request; this keeps both bounded.
class BoundedServer : public httplib::Server {
 private:
  bool process_and_close_socket(socket_t sock) override {
    ConnectionRegistry::Connection conn(PeerAddress(sock));
    const ConnectionRegistry::Admission admitted(registry_, &conn);
    if (!admitted.ok()) {
      ::close(sock);  // its client is at its cap, every connection mid-request: no thread waits
      return false;
    }
    bool ret = false;
    bool linger = false;
    for (size_t count = keep_alive_max_count_; count > 0 && KeepAlive(sock, conn); --count) {
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

  // Waits for the client's next request as httplib does (idle: no byte of it yet), but gives up
  // when the server stops, when the connection is asked to make room for its client's newer one,
  // and when another connection waits for a thread.
  bool KeepAlive(int sock, ConnectionRegistry::Connection& conn) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
    registry_.SetIdle(&conn, true);
    bool request = false;
    // Polls in a row that saw a connection waiting for a thread: two (50 ms), so a connection
    // that a free thread is just picking up does not cost an idle one its place.
    int saw_waiting = 0;
    while (svr_sock_ != INVALID_SOCKET && !conn.evict && saw_waiting < 2) {
      saw_waiting = waiting_for_thread_ > 0 ? saw_waiting + 1 : 0;
      pollfd p{sock, POLLIN, 0};
      const int n = ::poll(&p, 1, 50);
      if (n > 0) {
        request = true;
        break;
      }
      if (n < 0 && errno != EINTR) break;
      if (std::chrono::steady_clock::now() > deadline) break;
    }
    registry_.SetIdle(&conn, false);
    return request;
  }

  // The client's address without its port ("" when unknown: those share one count).
  static std::string PeerAddress(int sock) {
    std::string ip;
    int port = 0;
    BoundedStream(sock, 0, 0, 0).get_remote_ip_and_port(ip, port);
    return ip;
  }

 public:
  explicit BoundedServer(int threads) {
    // The pool counts the connections accepted but not yet on a thread: while any waits, idle
    // connections give their threads up (KeepAlive).
    new_task_queue = [this, threads] { return new CountingPool(threads, &waiting_for_thread_); };
  }

 private:
  ConnectionRegistry registry_;
  std::atomic<int> waiting_for_thread_{0};

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

}  // namespace

void CloseAfterResponse() { t_close_after_response = true; }

std::unique_ptr<httplib::Server> MakeBoundedServer(int threads) {
  return std::make_unique<BoundedServer>(threads);
}

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

}  // namespace baton
