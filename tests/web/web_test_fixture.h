// The web tests' fixtures (web_api_test.cc, web_http_test.cc, web_nonfinite_test.cc): a temp
// database filled through the real path (run_fixture.h: event files + IngestRun) with the demo
// run (3 attempts) and a live run named like an XSS payload, the service over a read pool, and
// for the HTTP tests the real server on a free loopback port, its client, and raw exchanges
// (tests/common/raw_connection.h) for requests httplib's client would not send. Test-only; one
// fixture per test.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "orchestrator/http/http_server.h"
#include "orchestrator/http/run_history_service.h"
#include "orchestrator/http/store_pool.h"
#include "run_fixture.h"
#include "tests/common/raw_connection.h"
#include "tests/common/temp_dir.h"
#include "tests/common/test_store.h"

namespace baton {

class WebApi : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = test::TestStore(tmp_ / "baton.db");
    Result<std::unique_ptr<Store>> s = Store::Open(db_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    Result<int64_t> demo =
        webtest::CreateRunThroughIngest(*store_, tmp_ / "runs", webtest::DemoRunSpec());
    ASSERT_TRUE(demo.ok()) << demo.status().ToString();
    demo_ = *demo;
    Result<int64_t> xss =
        webtest::CreateRunThroughIngest(*store_, tmp_ / "runs", webtest::LiveRunSpec(kXss, 40));
    ASSERT_TRUE(xss.ok()) << xss.status().ToString();
    xss_ = *xss;
    pool_ = std::make_unique<StorePool>(db_, 4);
    ASSERT_TRUE(pool_->Warm(4).ok());
    service_ = std::make_unique<RunHistoryService>(pool_.get(), [] { return 1.7e9 + 10000; });
  }

  nlohmann::json Ok(const Result<nlohmann::json>& r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : nlohmann::json();
  }

  static constexpr const char* kXss = "<script>alert(1)</script>";
  test::TempDir tmp_;
  std::string db_;
  std::unique_ptr<Store> store_;
  int64_t demo_ = 0, xss_ = 0;
  std::unique_ptr<StorePool> pool_;
  std::unique_ptr<RunHistoryService> service_;
};

using test::RawConnection;

// One raw exchange: status, headers (lower-cased names) and body of the first response.
struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
};

inline RawResponse Exchange(int port, const std::string& request) {
  RawConnection c(port);
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c.Send(request));
  const std::string raw = c.Response(/*timeout_s=*/10);  // never waits forever on the server
  RawResponse r;
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::atoi(raw.c_str() + 9);
  std::istringstream head(raw.substr(0, head_end));
  std::string line;
  std::getline(head, line);  // the status line
  while (std::getline(head, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    if (!value.empty() && value.back() == '\r') value.pop_back();
    r.headers[name] = value;
  }
  r.body = raw.substr(head_end + 4);
  if (r.headers.count("content-length")) {
    r.body = r.body.substr(0, size_t(std::atoll(r.headers["content-length"].c_str())));
  }
  return r;
}

// The one error shape: {"error": {"code", "status", "message"}} with the response's status.
inline void ExpectErrorShape(RawResponse r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_NE(r.headers["content-type"].find("application/json"), std::string::npos) << r.body;
  const nlohmann::json body = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(body.is_object() && body.contains("error")) << r.body;
  EXPECT_EQ(body["error"]["status"], status) << r.body;
  EXPECT_EQ(body["error"]["code"], code) << r.body;
  EXPECT_TRUE(body["error"]["message"].is_string()) << r.body;
}

class WebHttp : public WebApi {
 protected:
  void Start(const std::string& token = "") {
    ServerOptions o;
    o.port = 0;
    o.token = token;
    server_ = std::make_unique<HttpServer>(service_.get(), o);
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { (void)server_->Listen(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    for (int i = 0; i < 200; ++i) {
      if (client_->Get("/api/health")) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  // GET `path`; checks the status and, for errors, the one error shape.
  nlohmann::json Get(const std::string& path, int want_status, const httplib::Headers& h = {}) {
    httplib::Result res = client_->Get(path.c_str(), h);
    EXPECT_TRUE(res) << path;
    if (!res) return nlohmann::json();
    EXPECT_EQ(res->status, want_status) << path << ": " << res->body;
    nlohmann::json body = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
    if (want_status >= 400) {
      EXPECT_TRUE(body.contains("error")) << res->body;
      EXPECT_EQ(body["error"]["status"], want_status);
      EXPECT_TRUE(body["error"]["message"].is_string());
      EXPECT_TRUE(body["error"]["code"].is_string());
    }
    return body;
  }
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

// With the nonfinite-demo run too (run_fixture.h): skipped steps and the trainer's end message.
class WebNonfinite : public WebHttp {
 protected:
  void SetUp() override {
    WebHttp::SetUp();
    Result<int64_t> id =
        webtest::CreateRunThroughIngest(*store_, tmp_ / "runs", webtest::NonfiniteRunSpec());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    nonfinite_ = *id;
  }
  int64_t nonfinite_ = 0;
};

}  // namespace baton
