// The HTTP layer's contracts over the real server (web_test_fixture.h): one error shape for every
// error, httplib's own included; 404s; unknown or repeated query parameters; 405 with Allow;
// the token; no path traversal; HEAD; answers while a writer holds the lock, while slow clients
// hold connections open, and beyond the read connections.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "orchestrator/http/bounded_server.h"
#include "orchestrator/http/static_files.h"
#include "web_test_fixture.h"

using nlohmann::json;

namespace baton {
namespace {

TEST_F(WebHttp, RoutesAndErrorsInOneShape) {
  Start();
  json runs = Get("/api/runs?limit=1&sort=name&order=asc", 200);
  EXPECT_EQ(runs["runs"].size(), 1u);
  EXPECT_EQ(runs["page"]["total"], 2);
  Get("/api/runs/" + std::to_string(demo_), 200);
  json series =
      Get("/api/runs/" + std::to_string(demo_) + "/series?keys=lr,loss&max_points=100&superseded=1",
          200);
  EXPECT_LE(series["series"]["lr"]["step"].size(), 100u);
  EXPECT_EQ(series["superseded"]["loss"]["step"].size(), 100u);
  Get("/api/runs/" + std::to_string(demo_) + "/attempts?limit=2", 200);
  Get("/api/runs/" + std::to_string(demo_) + "/checkpoints", 200);

  EXPECT_EQ(Get("/api/runs/9999", 404)["error"]["code"], "not_found");
  Get("/api/runs/9999/series?keys=lr", 404);
  Get("/api/runs/abc", 404);
  Get("/api/runs/99999999999999999999999", 404);
  Get("/api/nope", 404);
  EXPECT_EQ(Get("/api/runs?limit=0", 400)["error"]["code"], "bad_request");
  Get("/api/runs?limit=abc", 400);
  Get("/api/runs?sort=drop_table", 400);
  Get("/api/runs/" + std::to_string(demo_) + "/series?keys=lr,secret", 400);
  Get("/api/runs/" + std::to_string(demo_) + "/series?max_points=1", 400);
  httplib::Result post = client_->Post("/api/runs", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_TRUE(json::parse(post->body).contains("error"));
}

TEST_F(WebHttp, ServesTheEmbeddedUiWithoutPathTraversal) {
  Start();
  httplib::Result index = client_->Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_NE(index->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(index->get_header_value("Content-Security-Policy").find("script-src 'self'"),
            std::string::npos);
  httplib::Result chart = client_->Get("/vendor/chart.umd.min.js");
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->status, 200);
  EXPECT_GT(chart->body.size(), 100000u);
  for (const char* bad :
       {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/vendor/../index.html", "/.hidden",
        "/..%2f..%2fetc/passwd", "//etc/passwd", "/no-such-file.js"}) {
    httplib::Result r = client_->Get(bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 404) << bad;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << bad;
  }
  EXPECT_FALSE(StaticFiles::IsSafePath("../x"));
  EXPECT_FALSE(StaticFiles::IsSafePath("a/../../x"));
  EXPECT_FALSE(StaticFiles::IsSafePath("a\\..\\x"));
  EXPECT_TRUE(StaticFiles::IsSafePath("vendor/chart.umd.min.js"));
}

TEST_F(WebHttp, DiskUiDirCannotBeEscaped) {
  std::filesystem::create_directories(tmp_ / "ui");
  std::ofstream(tmp_ / "ui/index.html") << "<p>dev</p>";
  std::ofstream(tmp_ / "secret.txt") << "secret";
  std::filesystem::create_symlink(tmp_ / "secret.txt", tmp_ / "ui/link.txt");
  StaticFiles files(tmp_ / "ui");
  Result<StaticFile> index = files.Find("/");
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->body, "<p>dev</p>");
  EXPECT_FALSE(files.Find("/link.txt").ok());  // resolves outside the folder
  EXPECT_FALSE(files.Find("/../secret.txt").ok());
  EXPECT_TRUE(files.Find("/vendor/chart.umd.min.js").ok());  // always the embedded copy
}

TEST_F(WebHttp, TokenGuardsTheApi) {
  Start("s3cret");
  EXPECT_EQ(Get("/api/runs", 401)["error"]["code"], "unauthorized");
  Get("/api/runs", 401, {{"Authorization", "Bearer wrong"}});
  Get("/api/runs", 200, {{"Authorization", "Bearer s3cret"}});
  Get("/api/runs?token=s3cret", 200);
  httplib::Result index = client_->Get("/");  // the UI itself holds no data
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
}

TEST_F(WebHttp, AnswersWhileIngestionHoldsTheWriteLock) {
  Start();
  // Another connection takes the write lock (BEGIN IMMEDIATE) and writes, as ingest does.
  Result<std::unique_ptr<Store>> writer = Store::Open(db_);
  ASSERT_TRUE(writer.ok());
  Result<Transaction> tx = (*writer)->Begin();
  ASSERT_TRUE(tx.ok());
  StepRecord s;
  s.run_id = xss_;
  s.attempt_id = (*writer)->ListAttempts(xss_).value().front().id;
  s.step = 40;
  s.time = 1.7e9 + 9000;
  s.lr = 1e-5;
  ASSERT_TRUE((*writer)->InsertStepInTx(s).ok());
  const auto t0 = std::chrono::steady_clock::now();
  json runs = Get("/api/runs", 200);
  json series = Get("/api/runs/" + std::to_string(xss_) + "/series?keys=lr", 200);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(waited, 2.0);  // far below the 10 s busy timeout: readers never wait on the writer
  EXPECT_EQ(series["rows"], 40);  // the uncommitted row is not visible
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(Get("/api/runs/" + std::to_string(xss_) + "/series?keys=lr", 200)["rows"], 41);
}

TEST_F(WebHttp, UnknownOrRepeatedQueryParametersAreRejected) {
  Start();
  const std::string run = "/api/runs/" + std::to_string(demo_);
  for (const std::string& path :
       {std::string("/api/health?x=1"), std::string("/api/runs?limt=5"),
        std::string("/api/runs?limit=5&sort=id&verbose=1"), run + "?limit=5",
        run + "/attempts?sort=id", run + "/checkpoints?keys=lr", run + "/series?limit=10",
        run + "/series?keys=lr&max_point=10", std::string("/api/runs?token=abc"),
        std::string("/api/runs?%3Cscript%3E=1")}) {
    const json e = Get(path, 400);
    EXPECT_EQ(e["error"]["code"], "bad_request") << path;
    EXPECT_NE(e["error"]["message"].get<std::string>().find("unknown query parameter"),
              std::string::npos)
        << path << ": " << e;
  }
  EXPECT_NE(Get("/api/runs?limt=5", 400)["error"]["message"].get<std::string>().find("'limt'"),
            std::string::npos);
  EXPECT_NE(Get("/api/runs?%3Cscript%3E=1", 400)["error"]["message"].get<std::string>().find(
                "'<script>'"),
            std::string::npos);
  // The same parameter twice is ambiguous (which one wins?), not silently the first.
  const json twice = Get("/api/runs?limit=1&limit=2", 400);
  EXPECT_NE(twice["error"]["message"].get<std::string>().find("'limit'"), std::string::npos);
  Get(run + "/series?keys=lr&keys=loss", 400);
  EXPECT_NE(Get("/api/runs?a%00b=1", 400)["error"]["message"].get<std::string>().find(
                std::string("'a\0b'", 5)),
            std::string::npos);
  Get("/api/runs?limit", 400);  // present without a value: not the default
  Get("/api/runs?limit=%FF", 400);
  // Known parameters still work; the static UI takes any (its page URL carries ?token=).
  Get("/api/runs?limit=1&offset=0&sort=id&order=asc&status=RUNNING", 200);
  Get(run + "/series?keys=lr&max_points=100&superseded=0", 200);
  Get(run + "/attempts?limit=1&offset=1", 200);
  Get(run + "/checkpoints?limit=1&offset=0", 200);
  httplib::Result page = client_->Get("/?token=abc&run=7");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  // An unknown route stays a 404 whatever its parameters.
  Get("/api/nope?x=1", 404);
}

TEST_F(WebHttp, TokenIsAKnownParameterOnlyWhenTheServerHasOne) {
  Start("s3cret");
  Get("/api/runs?token=s3cret&limit=1", 200);
  Get("/api/health?token=s3cret", 200);
  Get("/api/runs?token=s3cret&bogus=1", 400);
  Get("/api/runs?bogus=1", 401);  // no token: nothing about the routes leaks
}

TEST_F(WebHttp, EveryErrorUsesTheOneShape) {
  Start();
  const int port = server_->port();
  // Methods other than GET/HEAD: 405 with Allow, bodies or not, known to httplib or not.
  for (const std::string method :
       {"OPTIONS", "TRACE", "CONNECT", "POST", "PUT", "PATCH", "DELETE", "PROPFIND", "FOO"}) {
    for (const std::string path : {"/api/runs", "/index.html", "/no-such"}) {
      const RawResponse r =
          Exchange(port, method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      ExpectErrorShape(r, 405, "method_not_allowed");
      EXPECT_EQ(r.headers.at("allow"), "GET, HEAD") << method << " " << path;
    }
  }
  ExpectErrorShape(Exchange(port, "OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                   405, "method_not_allowed");
  // A body is read (so the connection stays in step) but never accepted.
  ExpectErrorShape(Exchange(port,
                            "POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                            "Connection: close\r\n\r\n{}"),
                   405, "method_not_allowed");
  const std::string big(2 * 1024 * 1024, 'x');
  ExpectErrorShape(
      Exchange(port, "PUT /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                         std::to_string(big.size()) + "\r\nConnection: close\r\n\r\n" + big),
      413, "payload_too_large");
  // Errors httplib answers itself, before any route runs.
  ExpectErrorShape(Exchange(port, "GET /" + std::string(9000, 'a') +
                                      " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                   414, "uri_too_long");
  ExpectErrorShape(Exchange(port, "GET /api/runs?" + std::string(9000, 'a') +
                                      "=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                   414, "uri_too_long");
  ExpectErrorShape(Exchange(port, "GET /api/runs HTTP/9.9\r\nHost: x\r\n\r\n"), 400, "bad_request");
  ExpectErrorShape(Exchange(port, "this is not http\r\n\r\n"), 400, "bad_request");
  ExpectErrorShape(Exchange(port, "GET /api/runs HTTP/1.1\r\nX-Big: " + std::string(9000, 'b') +
                                      "\r\nConnection: close\r\n\r\n"),
                   400, "bad_request");
  ExpectErrorShape(Exchange(port,
                            "GET /api/health HTTP/1.1\r\nHost: x\r\nRange: bytes=zz\r\n"
                            "Connection: close\r\n\r\n"),
                   416, "range_not_satisfiable");
  // A Range is ignored: JSON answers, errors included, are never cut to a byte range.
  const RawResponse ranged =
      Exchange(port,
               "GET /api/runs/9999 HTTP/1.1\r\nHost: x\r\nRange: bytes=0-5\r\n"
               "Connection: close\r\n\r\n");
  ExpectErrorShape(ranged, 404, "not_found");
  const RawResponse whole = Exchange(
      port, "GET /api/health HTTP/1.1\r\nHost: x\r\nRange: bytes=2-3\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(whole.status, 200);
  EXPECT_EQ(json::parse(whole.body, nullptr, false), json({{"ok", true}})) << whole.body;
  std::string many_ranges = "bytes=0-1";
  for (int i = 0; i < 2000; ++i) many_ranges += ",0-1";
  const RawResponse still_whole =
      Exchange(port, "GET /api/health HTTP/1.1\r\nHost: x\r\nRange: " + many_ranges +
                         "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(still_whole.status, 200);
  EXPECT_EQ(json::parse(still_whole.body, nullptr, false), json({{"ok", true}}));
  // Paths just under the 8192-byte limit reach the routes and answer 404, not a crash.
  ExpectErrorShape(Exchange(port, "GET /api/runs/" + std::string(8100, '1') +
                                      "/series HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                   404, "not_found");
  std::string deep;
  for (int i = 0; i < 4050; ++i) deep += "/a";
  ExpectErrorShape(
      Exchange(port, "GET " + deep + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), 404,
      "not_found");
  // Not-found paths httplib's routes cannot match at all (absolute form, a decoded newline).
  ExpectErrorShape(
      Exchange(port, "GET http://x/api/runs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), 404,
      "not_found");
  ExpectErrorShape(Exchange(port, "GET /a%0Ab HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                   404, "not_found");
}

TEST_F(WebHttp, HeadAndGetServeStaticFilesAndTheApi) {
  Start();
  for (const char* path : {"/", "/index.html", "/vendor/chart.umd.min.js", "/api/health"}) {
    httplib::Result get = client_->Get(path);
    ASSERT_TRUE(get) << path;
    EXPECT_EQ(get->status, 200) << path;
    EXPECT_FALSE(get->body.empty()) << path;
    httplib::Result head = client_->Head(path);
    ASSERT_TRUE(head) << path;
    EXPECT_EQ(head->status, 200) << path;
    EXPECT_TRUE(head->body.empty()) << path;
    EXPECT_EQ(head->get_header_value("Content-Length"), std::to_string(get->body.size())) << path;
    EXPECT_EQ(head->get_header_value("Content-Type"), get->get_header_value("Content-Type"));
  }
  httplib::Result missing = client_->Head("/no-such-file.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

// 32 slow clients — half connect and send nothing, half trickle a request line a byte at a
// time — must not hold every worker: a normal request is still answered within a second.
TEST_F(WebHttp, SlowClientsDoNotStarveOthers) {
  Start();
  constexpr int kSlowClients = 32;
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < kSlowClients; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(slow.back()->ok());
    // Paced so the server accepts each at once: a burst overflows its short listen backlog and
    // the kernel retries the dropped ones a second later, after the request this test times.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    const std::string line = "GET /api/runs?limit=1 HTTP/1.1\r\nHost: x\r\n";
    for (size_t i = 0; i < line.size() && !done; ++i) {
      for (int c = 0; c < kSlowClients; c += 2) slow[size_t(c)]->Send(line.substr(i, 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // all accepted, all waiting

  httplib::Client other("127.0.0.1", server_->port());
  other.set_read_timeout(5, 0);
  const auto t0 = std::chrono::steady_clock::now();
  httplib::Result res = other.Get("/api/runs?limit=1");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  done = true;
  trickle.join();
  std::cout << "normal request with " << kSlowClients << " slow connections open: " << took
            << " s\n";
  ASSERT_TRUE(res) << "no answer within 5 s (" << httplib::to_string(res.error()) << ")";
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(took, 1.0);
}

// More API requests at once than there are turns at the database: the rest wait their turn and
// every one is answered. One client address, so no more than its connection cap: beyond that
// the server refuses a connection on purpose (BoundedServer).
TEST_F(WebHttp, ConcurrentRequestsBeyondTheReadConnectionsAllAnswer) {
  Start();
  constexpr int kClients = 2 * kHttpReadConnections;
  static_assert(kClients <= kMaxConnectionsPerClient, "one address may hold this many at once");
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&] {
      httplib::Client c("127.0.0.1", server_->port());
      httplib::Result r = c.Get(("/api/runs/" + std::to_string(demo_) + "/series?keys=lr").c_str());
      if (r && r->status == 200) ++answered;
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(answered, kClients);
}

}  // namespace
}  // namespace baton
