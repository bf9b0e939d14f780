// BoundedServer: the connection layer under HttpServer — httplib's server with its connection
// loop replaced (the one virtual it offers for that). The same keep-alive rules, but each
// request read through a stream that hands httplib at most kMaxRequestHeadBytes +
// kMaxRequestBodyBytes, and the connection closed after a request that was cut off or whose
// body was left unread (CloseAfterResponse). cpp-httplib 0.11 reads every line of a request into
// a buffer without limit and parses an unread body as the next request; this keeps both bounded.
//
// Slow clients: an idle connection (no byte of a request yet) is closed after
// kKeepAliveTimeoutS, at once while another connection waits for a thread, and when its client
// opens one more than kMaxConnectionsPerClient (the newer one takes the oldest idle one's place;
// it is closed at once instead when every one of the client's connections is mid-request). A
// request must arrive whole within kRequestTimeoutS. So idle connections never keep a real
// request waiting, and one client's slow requests hold at most kMaxConnectionsPerClient threads.
//
// The limits and timeouts below are the server's; HttpServer applies the timeouts. One
// connection is processed on one pool thread from start to end (CloseAfterResponse is per
// thread).
#pragma once

#include <httplib.h>

#include <cstddef>
#include <ctime>
#include <memory>

namespace baton {

// Seconds a client may pause while sending its request, and an idle connection (no request yet,
// or between keep-alive requests) is kept. Short: each such client holds a connection thread.
// The idle timeout is shorter than the request timeout: a connection that sends nothing goes
// first.
inline constexpr time_t kReadTimeoutS = 5;
inline constexpr time_t kKeepAliveTimeoutS = 2;
// Seconds from a request's first byte to its last (line, headers, body): a client that trickles
// a byte at a time within kReadTimeoutS is cut off here instead of holding its thread for ever.
inline constexpr int kRequestTimeoutS = 10;
// Connections from one client address served at once (a browser opens 6 per host). Far below
// the connection threads, so one client that opens many (a proxy's pool, a slow-client attack)
// leaves threads for others.
inline constexpr int kMaxConnectionsPerClient = 16;
// Seconds a client may take to receive a response (a series can be a few hundred KiB).
inline constexpr time_t kWriteTimeoutS = 30;
// Bytes of request body read (and dropped) for a method that is refused anyway; larger is 413,
// answered from the headers alone before a byte of the body is read.
inline constexpr size_t kMaxRequestBodyBytes = 64 * 1024;
// Bytes of request line and headers httplib may read for one request (each line is also held to
// its 8192). Beyond that the stream ends, so the request is refused (400/414) and the connection
// closed: a request line or header without an end never grows a buffer.
inline constexpr size_t kMaxRequestHeadBytes = 64 * 1024;
// After refusing a request whose body was not read, the connection is closed. Up to this many of
// the body's bytes (or this long) are read and dropped first, so a client still sending a
// modest body gets to read the answer instead of a reset.
inline constexpr size_t kLingerDrainBytes = 4 << 20;
inline constexpr int kLingerDrainMs = 1000;

// The request's body as its headers announce it: none, a Content-Length within our limit, or
// one we will not read (over the limit, not a number, or chunked: no length up front).
enum class BodyKind { kNone, kSmall, kRefused };
BodyKind RequestBody(const httplib::Request& req);

// Called by a handler that answers a request whose body it has not read (or will not read): the
// connection is closed after this response, or the body would be parsed as the next request.
void CloseAfterResponse();

// A new server with the bounded connection loop and `threads` connection threads.
std::unique_ptr<httplib::Server> MakeBoundedServer(int threads);

}  // namespace baton
