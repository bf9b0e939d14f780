// RawConnection: a plain TCP connection to 127.0.0.1:port that sends exactly the bytes it is
// given and reads with a deadline, for requests httplib's client would not send (a body over the
// limit, TRACE, a malformed or endless request line) and for watching the server close the
// connection. Shared by the HTTP tests of tests/orchestrator and tests/web; test-only, one
// connection per object.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace baton::test {

class RawConnection {
 public:
  using Clock = std::chrono::steady_clock;

  // `from`: the local address to connect from (another loopback address, "127.0.0.2", is
  // another client to the server); the system's choice when null.
  explicit RawConnection(int port, const char* from = nullptr)
      : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ >= 0 && from != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      if (::inet_pton(AF_INET, from, &local.sin_addr) != 1 ||
          ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
        ::close(fd_);
        fd_ = -1;
      }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  bool Send(const std::string& bytes) {
    return fd_ >= 0 && ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                           static_cast<ssize_t>(bytes.size());
  }
  // The first response: its head, then as many body bytes as its Content-Length says; what came
  // when the deadline passed ("" when nothing did). Not "until the server closes": after a
  // request httplib could not parse, it keeps the connection and reads the rest of the request
  // as further (malformed) requests.
  std::string Response(double timeout_s = 3) {
    std::string got;
    size_t want = std::string::npos;
    const Clock::time_point deadline = Deadline(timeout_s);
    while (got.size() < want && Wait(deadline)) {
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, size_t(n));
      const size_t head = got.find("\r\n\r\n");
      if (want == std::string::npos && head != std::string::npos) {
        std::string lower = got.substr(0, head);
        for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
        const size_t cl = lower.find("\r\ncontent-length:");
        want = head + 4 + (cl == std::string::npos ? 0 : size_t(std::atoll(&lower[cl + 17])));
      }
    }
    return got;
  }
  // True when the server closed the connection within `timeout_s` (reads drain what it sends).
  bool ClosedByServer(double timeout_s = 3) {
    const Clock::time_point deadline = Deadline(timeout_s);
    char buf[4096];
    while (Wait(deadline)) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
    return false;
  }

 private:
  static Clock::time_point Deadline(double timeout_s) {
    return Clock::now() + std::chrono::milliseconds(int64_t(timeout_s * 1000));
  }
  // Whether there is something to read (or the close) before `deadline`.
  bool Wait(Clock::time_point deadline) {
    if (fd_ < 0) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    timeval tv{time_t(left / 1000), suseconds_t(left % 1000) * 1000};
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fd_, &r);
    return ::select(fd_ + 1, &r, nullptr, nullptr, &tv) > 0;
  }

  int fd_;
};

}  // namespace baton::test
