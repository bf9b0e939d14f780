// The HTTP server refuses what it will not read before reading it: a body over 64 KiB (413, from
// the headers alone), a body on a token-protected /api/ request without the token (401), a GET's
// body (never read by httplib, so the connection goes), a request line or header that never
// ends. Each answer comes at once, without the client sending the body, and the connection is
// closed after it, so nothing the client sends next is buffered as a "request". Ordinary
// keep-alive requests still share a connection.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "orchestrator/http/http_server.h"
#include "orchestrator/http/run_history_service.h"
#include "orchestrator/http/store_pool.h"
#include "orchestrator/store/store.h"
#include "test_util.h"
#include "tests/common/raw_connection.h"

namespace baton {
namespace {

using Clock = std::chrono::steady_clock;
using test::RawConnection;

int StatusOf(const std::string& response) {
  return response.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(response.c_str() + 9) : 0;
}

class HttpBodyLimit : public ::testing::Test {
 protected:
  void Start(const std::string& token) {
    const std::string db = tmp_ / "baton.db";
    ASSERT_TRUE(Store::Open(db).ok());
    pool_ = std::make_unique<StorePool>(db, 2);
    ASSERT_TRUE(pool_->Warm(2).ok());
    service_ = std::make_unique<RunHistoryService>(pool_.get(), [] { return 1.7e9; });
    ServerOptions o;
    o.port = 0;
    o.token = token;
    server_ = std::make_unique<HttpServer>(service_.get(), o);
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { (void)server_->Listen(); });
    for (int i = 0; i < 200; ++i) {
      RawConnection probe(server_->port());
      if (probe.Send("GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") &&
          StatusOf(probe.Response()) != 0) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return server_->port(); }

  // Sends `head` only (no body), and expects `status` within a second, then the connection
  // closed by the server.
  void ExpectRefusedUnread(const std::string& head, int status) {
    RawConnection c(port());
    ASSERT_TRUE(c.Send(head));
    const auto t0 = Clock::now();
    const std::string r = c.Response(3);
    EXPECT_EQ(StatusOf(r), status) << head.substr(0, 80) << "\n" << r;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0)
        << "the answer waited for the body";
    EXPECT_NE(r.find("\"error\""), std::string::npos) << r;
    EXPECT_TRUE(c.ClosedByServer()) << head.substr(0, 80);
  }

  test::TempDir tmp_;
  std::unique_ptr<StorePool> pool_;
  std::unique_ptr<RunHistoryService> service_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(HttpBodyLimit, LargeBodiesAreRefusedFromTheHeadersAlone) {
  Start("");
  ExpectRefusedUnread("PUT /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 500000000\r\n\r\n",
                      413);
  ExpectRefusedUnread("GET /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n",
                      413);
  ExpectRefusedUnread("POST /api/runs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                      413);
  ExpectRefusedUnread("POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n", 413);
}

TEST_F(HttpBodyLimit, NoTokenIsRefusedBeforeTheBody) {
  Start("secret");
  // Over the limit: 413 before anything else, unread.
  ExpectRefusedUnread("GET /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 500000000\r\n\r\n",
                      413);
  // A small body the server never reads (a GET's): 401 at once, and the connection goes, so the
  // body is never parsed as a next request.
  RawConnection c(port());
  ASSERT_TRUE(c.Send("GET /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n"));
  EXPECT_EQ(StatusOf(c.Response()), 401);
  EXPECT_TRUE(c.ClosedByServer());
  // With the token the same request is answered, then the connection goes all the same.
  RawConnection t(port());
  ASSERT_TRUE(
      t.Send("GET /api/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\nContent-Length: "
             "5\r\n\r\nhello"));
  EXPECT_EQ(StatusOf(t.Response()), 200);
  EXPECT_TRUE(t.ClosedByServer());
}

// A request line or header line that never ends is cut off at the per-request budget and
// refused, instead of growing a buffer until the client stops.
TEST_F(HttpBodyLimit, EndlessLinesAreCutOff) {
  Start("");
  {
    RawConnection c(port());
    ASSERT_TRUE(c.Send("GET /" + std::string(200000, 'a')));
    const std::string r = c.Response(3);
    EXPECT_EQ(StatusOf(r), 414) << r.substr(0, 200);
    EXPECT_TRUE(c.ClosedByServer());
  }
  {
    RawConnection c(port());
    ASSERT_TRUE(c.Send("GET /api/health HTTP/1.1\r\nX-Big: " + std::string(200000, 'b')));
    const std::string r = c.Response(3);
    EXPECT_EQ(StatusOf(r), 400) << r.substr(0, 200);
    EXPECT_TRUE(c.ClosedByServer());
  }
}

// What stays as it was: requests on one keep-alive connection, and a small body of a refused
// method read and dropped so the connection stays in step.
TEST_F(HttpBodyLimit, KeepAliveStillWorks) {
  Start("");
  RawConnection c(port());
  ASSERT_TRUE(c.Send("GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(StatusOf(c.Response()), 200);
  ASSERT_TRUE(c.Send("POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"));
  EXPECT_EQ(StatusOf(c.Response()), 405);
  ASSERT_TRUE(c.Send("GET /api/runs HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string r = c.Response();
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_NE(r.find("\"runs\""), std::string::npos) << r;
}

}  // namespace
}  // namespace baton
