// Slow clients cannot starve `baton serve`: with as many idle connections open as the server has
// connection threads (from one address, or from several), a real request is answered at once; an
// idle connection is closed after the idle timeout, shorter than the request timeout; a client
// whose connections are all mid-request holds at most kMaxConnectionsPerClient threads.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "orchestrator/http/bounded_server.h"
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

constexpr const char* kHealth = "GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
constexpr const char* kSlowClient = "127.0.0.2";  // another loopback address: another client

int StatusOf(const std::string& response) {
  return response.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(response.c_str() + 9) : 0;
}

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

class HttpSlowClients : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string db = tmp_ / "baton.db";
    ASSERT_TRUE(Store::Open(db).ok());
    pool_ = std::make_unique<StorePool>(db, 2);
    ASSERT_TRUE(pool_->Warm(2).ok());
    service_ = std::make_unique<RunHistoryService>(pool_.get(), [] { return 1.7e9; });
    ServerOptions o;
    o.port = 0;
    server_ = std::make_unique<HttpServer>(service_.get(), o);
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { (void)server_->Listen(); });
    for (int i = 0; i < 200; ++i) {
      RawConnection probe(server_->port());
      if (probe.Send(kHealth) && StatusOf(probe.Response()) != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }

  test::TempDir tmp_;
  std::unique_ptr<StorePool> pool_;
  std::unique_ptr<RunHistoryService> service_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

// Opens `n` idle connections from `from`, paced so the server accepts each at once (a burst
// overflows its short listen backlog, and the kernel retries the dropped ones a second later).
std::vector<std::unique_ptr<RawConnection>> OpenIdle(int port, int n, const char* from) {
  std::vector<std::unique_ptr<RawConnection>> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(std::make_unique<RawConnection>(port, from));
    EXPECT_TRUE(out.back()->ok()) << "connection " << i << " from " << from;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

// Every connection thread held by an idle connection (16 from each of 4 addresses, the cap
// apiece): a real request waits for a thread, and the idle connections give theirs up.
TEST_F(HttpSlowClients, IdleConnectionsGiveWayToARealRequest) {
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (const char* from : {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}) {
    for (auto& c : OpenIdle(server_->port(), kMaxConnectionsPerClient, from)) {
      idle.push_back(std::move(c));
    }
  }
  ASSERT_EQ(int(idle.size()), kHttpConnectionThreads);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all accepted and waiting
  const auto t0 = Clock::now();
  RawConnection real(server_->port());
  ASSERT_TRUE(real.Send(kHealth));
  const std::string r = real.Response(5);
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_LT(SecondsSince(t0), 0.5) << "the real request waited for the idle connections";
}

// 64 idle connections from one address hold at most kMaxConnectionsPerClient threads; a real
// request from another address is answered at once.
TEST_F(HttpSlowClients, ManyIdleConnectionsFromOneClientLeaveRoomForOthers) {
  const auto idle = OpenIdle(server_->port(), kHttpConnectionThreads, kSlowClient);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = Clock::now();
  RawConnection real(server_->port());
  ASSERT_TRUE(real.Send(kHealth));
  const std::string r = real.Response(5);
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_LT(SecondsSince(t0), 0.5);
  // The client's first connections made room for its later ones: closed by the server.
  EXPECT_TRUE(idle[0]->ClosedByServer(0.5));
}

TEST_F(HttpSlowClients, AnIdleConnectionIsClosedAfterTheIdleTimeout) {
  static_assert(kKeepAliveTimeoutS < kRequestTimeoutS, "idle goes before a slow request");
  RawConnection c(server_->port());
  const auto t0 = Clock::now();
  ASSERT_TRUE(c.ClosedByServer(kKeepAliveTimeoutS + 2.0));
  const double s = SecondsSince(t0);
  EXPECT_GT(s, kKeepAliveTimeoutS - 0.5);
  EXPECT_LT(s, kKeepAliveTimeoutS + 1.0);
}

// A client whose every connection is mid-request (a request line begun, never ended) gets no
// more: its next connection is closed at once, and its requests still finish when they arrive.
TEST_F(HttpSlowClients, AClientAtItsCapMidRequestGetsNoMoreThreads) {
  auto held = OpenIdle(server_->port(), kMaxConnectionsPerClient, kSlowClient);
  for (auto& c : held) ASSERT_TRUE(c->Send("GET /api/health HTTP/1.1\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  RawConnection over(server_->port(), kSlowClient);
  const auto t0 = Clock::now();
  EXPECT_TRUE(over.ClosedByServer(1.0));
  EXPECT_LT(SecondsSince(t0), 0.5);
  ASSERT_TRUE(held[0]->Send("Host: x\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(StatusOf(held[0]->Response(3)), 200);
}

}  // namespace
}  // namespace baton
