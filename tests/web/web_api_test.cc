// The web API against a temp database filled through the real path (run_fixture.h: event files
// + IngestRun): the downsampler, the series and its superseded points, the timeline and audit
// figures of a 3-attempt run with a weights-only resume, and the HTTP layer's contracts (one
// error shape for every error, httplib's own included; 404s; unknown or repeated query
// parameters; 405 with Allow; pagination; token; no path traversal; answers while a writer
// holds the lock and while slow clients hold connections open).
#include <arpa/inet.h>
#include <gtest/gtest.h>
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

#include "orchestrator/http/http_server.h"
#include "orchestrator/http/run_history_service.h"
#include "orchestrator/http/run_profile.h"
#include "orchestrator/http/series_downsampler.h"
#include "orchestrator/http/static_files.h"
#include "run_fixture.h"
#include "tests/common/temp_dir.h"

using nlohmann::json;

namespace baton {
namespace {

using test::TempDir;

// ---- downsampler

TEST(WebDownsample, KeepsEverythingThatFits) {
  std::vector<int64_t> step = {0, 1, 2, 3}, seg = {1, 1, 2, 2};
  std::vector<double> v = {1, std::nan(""), 3, 4};
  EXPECT_EQ(DownsampleMinMax(step, v, seg, 10), (std::vector<size_t>{0, 2, 3}));
}

TEST(WebDownsample, KeepsExtremesAndEachSegmentsEnds) {
  std::vector<int64_t> step, seg;
  std::vector<double> v;
  for (int64_t s = 0; s < 100000; ++s) {
    step.push_back(s);
    seg.push_back(s < 30001 ? 1 : (s < 70003 ? 2 : 3));
    v.push_back(std::sin(double(s) / 500.0));
  }
  v[12345] = 50;   // a spike
  v[54321] = -50;  // a dip
  const std::vector<size_t> keep = DownsampleMinMax(step, v, seg, 2000);
  EXPECT_LE(keep.size(), 2000u);
  EXPECT_GT(keep.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(keep.begin(), keep.end()));
  for (size_t must : {size_t(0), size_t(30000), size_t(30001), size_t(70002), size_t(70003),
                      size_t(99999), size_t(12345), size_t(54321)}) {
    EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), must)) << must;
  }
}

// ---- fixture: the demo run (3 attempts) and a live run named like an XSS payload

class WebApi : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = tmp_ / "baton.db";
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

  json Ok(const Result<json>& r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : json();
  }

  static constexpr const char* kXss = "<script>alert(1)</script>";
  TempDir tmp_;
  std::string db_;
  std::unique_ptr<Store> store_;
  int64_t demo_ = 0, xss_ = 0;
  std::unique_ptr<StorePool> pool_;
  std::unique_ptr<RunHistoryService> service_;
};

TEST_F(WebApi, RunsListIsPaginatedAndSortable) {
  RunListQuery q;
  q.limit = 1;
  json page = Ok(service_->ListRuns(q));
  EXPECT_EQ(page["page"]["total"], 2);
  ASSERT_EQ(page["runs"].size(), 1u);
  EXPECT_EQ(page["runs"][0]["id"], xss_);    // newest first
  EXPECT_EQ(page["runs"][0]["name"], kXss);  // JSON carries the text; the UI escapes it
  EXPECT_EQ(page["runs"][0]["status"], "RUNNING");
  EXPECT_EQ(page["runs"][0]["live"], true);
  q.offset = 1;
  page = Ok(service_->ListRuns(q));
  ASSERT_EQ(page["runs"].size(), 1u);
  const json& demo = page["runs"][0];
  EXPECT_EQ(demo["id"], demo_);
  EXPECT_EQ(demo["status"], "COMPLETED");
  EXPECT_EQ(demo["attempt"], 3);
  EXPECT_EQ(demo["restarts"], 2);
  EXPECT_EQ(demo["steps_done"], 600);
  EXPECT_EQ(demo["last_step"], 599);
  EXPECT_EQ(demo["last_checkpoint_step"], 600);
  EXPECT_EQ(demo["attempts"][0]["end_reason"], "preempted");
  EXPECT_EQ(demo["attempts"][2]["end_reason"], "completed");
  EXPECT_NEAR(demo["last_lr"].get<double>(), 3e-5, 1e-12);

  RunListQuery by_progress;
  by_progress.sort = RunSortKey::kProgress;
  by_progress.descending = true;
  page = Ok(service_->ListRuns(by_progress));
  EXPECT_EQ(page["runs"][0]["id"], demo_);  // 100 % before 4 %
}

TEST_F(WebApi, RunTimelineLabelsAttemptsAndShadesWarmups) {
  json run = Ok(service_->GetRun(demo_));
  ASSERT_EQ(run["segments"].size(), 3u);
  const json& s = run["segments"];
  EXPECT_EQ(s[0]["label"], "#1 fresh @ 0");
  EXPECT_EQ(s[1]["label"], "#2 preempted → resumed exact @ 300");
  EXPECT_EQ(s[2]["label"], "#3 preempted → resumed weights_only @ 400");
  // First warmup [0, 100); none for the exact resume; the weights-only ramp [400, 419).
  EXPECT_EQ(s[0]["warmup_from"], 0);
  EXPECT_EQ(s[0]["warmup_until"], 100);
  EXPECT_EQ(s[0]["warmup_kind"], "warmup");
  EXPECT_TRUE(s[1]["warmup_from"].is_null());
  EXPECT_EQ(s[2]["warmup_from"], 400);
  EXPECT_EQ(s[2]["warmup_until"], 419);
  EXPECT_EQ(s[2]["warmup_kind"], "resume_warmup");
  EXPECT_EQ(s[2]["resume_mode"], "weights_only");
  EXPECT_EQ(s[0]["job_id"], "1001");
  EXPECT_EQ(s[1]["restart_count"], 1);
  // Effective step ranges: [0, 300), [300, 400), [400, 600).
  EXPECT_EQ(s[0]["effective_first_step"], 0);
  EXPECT_EQ(s[0]["effective_last_step"], 299);
  EXPECT_EQ(s[1]["effective_last_step"], 399);
  EXPECT_EQ(s[2]["effective_last_step"], 599);
  EXPECT_EQ(s[0]["summary"]["superseded_steps"], 50);
  EXPECT_NEAR(s[0]["summary"]["s_per_step"].get<double>(), 2.0, 1e-9);
  EXPECT_GT(s[0]["summary"]["tokens_per_s"].get<double>(), 10000);
  EXPECT_GT(s[0]["summary"]["padding_waste"].get<double>(), 0.01);
  EXPECT_LT(s[0]["summary"]["padding_waste"].get<double>(), 0.07);

  // Audit: 600 effective steps, 100 + 19 of them under warmup, 100 redone, 2 holds of 120 s.
  const json& a = run["audit"];
  EXPECT_EQ(a["effective_steps"], 600);
  EXPECT_EQ(a["warmup_steps"], 119);
  EXPECT_NEAR(a["warmup_fraction"].get<double>(), 119.0 / 600.0, 1e-12);
  EXPECT_EQ(a["expected_warmup_steps"], 100);
  EXPECT_EQ(a["steps_redone"], 100);
  EXPECT_NEAR(a["redone_compute_s"].get<double>(), 200.0, 1e-9);
  EXPECT_NEAR(a["requeue_hold_s"].get<double>(), 2 * webtest::kDemoHoldS, 1e-6);
  EXPECT_EQ(run["schedule"]["warmup_steps"], 100);
  EXPECT_NE(run["config"].get<std::string>().find("warmup_steps: 100"), std::string::npos);
}

TEST_F(WebApi, SeriesIsTheEffectiveCurveWithExpectedOverlay) {
  SeriesRequest req;
  req.keys = {"lr", "expected_lr", "loss", "padding"};
  req.max_points = 100000;
  json r = Ok(service_->GetSeries(demo_, req));
  EXPECT_EQ(r["rows"], 600);
  EXPECT_EQ(r["superseded_rows"], 0);
  EXPECT_FALSE(r.contains("superseded"));
  const json& lr = r["series"]["lr"];
  ASSERT_EQ(lr["step"].size(), 600u);
  const webtest::RunSpec spec = webtest::DemoRunSpec();
  for (size_t i = 0; i < 600; ++i) {
    const int64_t step = lr["step"][i];
    EXPECT_EQ(step, int64_t(i));
    const int attempt = lr["attempt"][i];
    EXPECT_EQ(attempt, step < 300 ? 1 : step < 400 ? 2 : 3) << step;
    const double want = webtest::FixtureLr(spec, spec.attempts[size_t(attempt - 1)], step);
    EXPECT_NEAR(lr["value"][i].get<double>(), want, 1e-15) << step;
  }
  // The logged weights-only ramp sits below the expected schedule; the exact resume does not.
  const json& ex = r["series"]["expected_lr"];
  EXPECT_NEAR(ex["value"][400].get<double>(), 3e-5, 1e-15);
  EXPECT_NEAR(lr["value"][400].get<double>(), 3e-5 / 20, 1e-15);
  EXPECT_NEAR(ex["value"][300].get<double>(), lr["value"][300].get<double>(), 1e-15);
  EXPECT_NEAR(ex["value"][50].get<double>(), 3e-5 * 0.5, 1e-15);
  // Tokens seen grow monotonically; wall time includes the requeue holds.
  const json& tokens = lr["tokens"];
  for (size_t i = 1; i < 600; ++i)
    EXPECT_GT(tokens[i].get<int64_t>(), tokens[i - 1].get<int64_t>());
  EXPECT_GT(lr["wall_s"][599].get<double>(), 600 * 2.0 + 2 * webtest::kDemoHoldS);
  EXPECT_EQ(r["series"]["padding"]["value"].size(), 600u);
}

TEST_F(WebApi, SupersededPointsOnRequest) {
  SeriesRequest req;
  req.keys = {"loss"};
  req.include_superseded = true;
  json r = Ok(service_->GetSeries(demo_, req));
  EXPECT_EQ(r["superseded_rows"], 100);
  const json& faint = r["superseded"]["loss"];
  ASSERT_EQ(faint["step"].size(), 100u);
  EXPECT_EQ(faint["step"][0], 300);
  EXPECT_EQ(faint["attempt"][0], 1);
  EXPECT_EQ(faint["step"][49], 349);
  EXPECT_EQ(faint["step"][50], 400);
  EXPECT_EQ(faint["attempt"][50], 2);
  EXPECT_EQ(faint["step"][99], 449);
  // The effective series still has exactly one point per step.
  EXPECT_EQ(r["series"]["loss"]["step"].size(), 600u);
}

TEST_F(WebApi, DownsampledSeriesKeepsAttemptEnds) {
  SeriesRequest req;
  req.keys = {"lr"};
  req.max_points = 40;
  json r = Ok(service_->GetSeries(demo_, req));
  const json& steps = r["series"]["lr"]["step"];
  EXPECT_LE(steps.size(), 40u);
  std::vector<int64_t> got = steps.get<std::vector<int64_t>>();
  for (int64_t must : {0, 299, 300, 399, 400, 599}) {
    EXPECT_NE(std::find(got.begin(), got.end(), must), got.end()) << must;
  }
}

TEST_F(WebApi, UnknownRunIsNotFound) {
  Result<json> r = service_->GetRun(9999);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_FALSE(service_->GetSeries(9999, SeriesRequest{{"lr"}}).ok());
  EXPECT_FALSE(service_->ListAttempts(9999, {}).ok());
  EXPECT_FALSE(service_->ListCheckpoints(9999, {}).ok());
}

TEST_F(WebApi, AttemptsAndCheckpointsPaginate) {
  json a = Ok(service_->ListAttempts(demo_, {2, 1}));
  EXPECT_EQ(a["page"]["total"], 3);
  ASSERT_EQ(a["attempts"].size(), 2u);
  EXPECT_EQ(a["attempts"][0]["attempt"], 2);
  json c = Ok(service_->ListCheckpoints(demo_, {100, 0}));
  EXPECT_EQ(c["page"]["total"], 5);
  EXPECT_EQ(c["checkpoints"][0]["step"], 600);  // newest first
  EXPECT_EQ(c["checkpoints"][0]["reason"], "final");
  EXPECT_EQ(c["checkpoints"][0]["valid"], true);
}

// ---- HTTP

// A plain TCP connection to 127.0.0.1:port that sends exactly the bytes it is given: requests
// httplib's client would not send (TRACE, a malformed line, an endless request line).
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    timeval tv{/*tv_sec=*/10, /*tv_usec=*/0};  // a test never waits forever on the server
    if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
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
  // The first response: its head, then as many body bytes as its Content-Length says. Not
  // "until the server closes": after a request httplib could not parse, it keeps the connection
  // and reads the rest of the request as further (malformed) requests.
  std::string ReadResponse() {
    std::string got;
    char buf[4096];
    size_t want = std::string::npos;
    while (fd_ >= 0 && got.size() < want) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, size_t(n));
      const size_t head_end = got.find("\r\n\r\n");
      if (want == std::string::npos && head_end != std::string::npos) {
        std::string head = got.substr(0, head_end);
        for (char& ch : head) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        const size_t cl = head.find("\r\ncontent-length:");
        want = head_end + 4 + (cl == std::string::npos ? 0 : size_t(std::atoll(&head[cl + 17])));
      }
    }
    return got;
  }

 private:
  int fd_;
};

// One raw exchange: status, headers (lower-cased names) and body of the first response.
struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
};

RawResponse Exchange(int port, const std::string& request) {
  RawConnection c(port);
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c.Send(request));
  const std::string raw = c.ReadResponse();
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
void ExpectErrorShape(RawResponse r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_NE(r.headers["content-type"].find("application/json"), std::string::npos) << r.body;
  const json body = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
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
  json Get(const std::string& path, int want_status, const httplib::Headers& h = {}) {
    httplib::Result res = client_->Get(path.c_str(), h);
    EXPECT_TRUE(res) << path;
    if (!res) return json();
    EXPECT_EQ(res->status, want_status) << path << ": " << res->body;
    json body = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
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
// every one is answered.
TEST_F(WebHttp, ConcurrentRequestsBeyondTheReadConnectionsAllAnswer) {
  Start();
  constexpr int kClients = 3 * kHttpReadConnections;
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

// ---- non-finite (skipped) steps and the trainer's end message (run_fixture.h: nonfinite-demo)

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

TEST_F(WebNonfinite, RunListsSkippedStepsAndTheTrainersWords) {
  json run = Ok(service_->GetRun(nonfinite_));
  EXPECT_EQ(run["status"], "FAILED");
  EXPECT_NE(run["reason"].get<std::string>().find(webtest::DivergedMessage()), std::string::npos);
  const json& nf = run["nonfinite"];
  EXPECT_EQ(nf["steps"], 4);
  EXPECT_EQ(nf["superseded"], 0);
  ASSERT_EQ(nf["listed"].size(), 4u);
  const json& first = nf["listed"][0];
  EXPECT_EQ(first["step"], 15);
  EXPECT_EQ(first["attempt"], 1);
  EXPECT_EQ(first["loss"], 1e6);  // finite but not applied
  EXPECT_TRUE(first["grad_norm"].is_null());
  EXPECT_EQ(first["episodes"], json({"ep_000003", webtest::kMarkupEpisode}));
  EXPECT_EQ(nf["listed"][1]["step"], 42);
  EXPECT_EQ(nf["listed"][1]["attempt"], 2);
  EXPECT_TRUE(nf["listed"][1]["loss"].is_null());
  EXPECT_EQ(nf["listed"][3]["step"], 44);
  EXPECT_EQ(run["audit"]["nonfinite_steps"], 4);

  const json& s = run["segments"];
  ASSERT_EQ(s.size(), 2u);
  // #1 was killed: the launcher's attempt_end is all there is.
  EXPECT_EQ(s[0]["end_reason"], "crashed");
  EXPECT_EQ(s[0]["exit_code"], 139);
  EXPECT_TRUE(s[0]["trainer_end_reason"].is_null());
  EXPECT_TRUE(s[0]["trainer_message"].is_null());
  EXPECT_TRUE(s[0]["trainer_exit_code"].is_null());
  EXPECT_EQ(s[0]["summary"]["nonfinite_steps"], 1);
  // #2 diverged and said why.
  EXPECT_EQ(s[1]["label"], "#2 crashed → resumed exact @ 20");
  EXPECT_EQ(s[1]["end_reason"], "diverged");
  EXPECT_EQ(s[1]["action"], "fail");
  EXPECT_EQ(s[1]["exit_code"], 79);
  EXPECT_EQ(s[1]["trainer_end_reason"], "diverged");
  EXPECT_EQ(s[1]["trainer_message"], webtest::DivergedMessage());
  EXPECT_EQ(s[1]["trainer_exit_code"], 79);
  EXPECT_EQ(s[1]["summary"]["nonfinite_steps"], 3);
  // The attempts endpoint carries the same fields.
  json attempts = Ok(service_->ListAttempts(nonfinite_, {100, 0}));
  EXPECT_EQ(attempts["attempts"][1]["trainer_message"], webtest::DivergedMessage());

  // A run without skipped steps says so (0, not absent).
  json demo = Ok(service_->GetRun(demo_));
  EXPECT_EQ(demo["nonfinite"]["steps"], 0);
  EXPECT_TRUE(demo["nonfinite"]["listed"].empty());
  EXPECT_EQ(demo["segments"][2]["trainer_end_reason"], "completed");
  EXPECT_EQ(demo["segments"][0]["trainer_end_reason"], "signal");
}

TEST_F(WebNonfinite, SeriesLeavesSkippedStepsOutOfTheCurvesAndMarksThem) {
  SeriesRequest req;
  req.keys = {"lr", "loss", "loss_video", "grad_norm", "tokens_per_s"};
  req.max_points = 100000;
  json r = Ok(service_->GetSeries(nonfinite_, req));
  EXPECT_EQ(r["rows"], 45);
  EXPECT_EQ(r["nonfinite"]["steps"], 4);
  EXPECT_EQ(r["nonfinite"]["ranges"], json::parse("[[15, 15], [42, 44]]"));
  auto steps_of = [&](const char* key) {
    return r["series"][key]["step"].get<std::vector<int64_t>>();
  };
  for (const char* key : {"loss", "loss_video", "grad_norm"}) {
    const std::vector<int64_t> steps = steps_of(key);
    EXPECT_EQ(steps.size(), 41u) << key;
    for (int64_t skipped : {15, 42, 43, 44}) {
      EXPECT_EQ(std::find(steps.begin(), steps.end(), skipped), steps.end()) << key << skipped;
    }
    for (const json& v : r["series"][key]["value"]) EXPECT_TRUE(v.is_number()) << key;
  }
  // The step still happened: its LR and throughput are drawn.
  EXPECT_EQ(steps_of("lr").size(), 45u);
  EXPECT_EQ(steps_of("tokens_per_s").size(), 45u);
  // The finite loss of the skipped step 15 (1e6) never reaches the curve.
  for (const json& v : r["series"]["loss"]["value"]) EXPECT_LT(v.get<double>(), 100.0);
}

TEST_F(WebNonfinite, HttpAnswersAreValidJsonWithNullsForMissingValues) {
  Start();
  const std::string id = std::to_string(nonfinite_);
  for (const std::string path :
       {"/api/runs/" + id, "/api/runs/" + id + "/attempts",
        "/api/runs/" + id + "/series?keys=lr,loss,loss_video,loss_action,grad_norm&superseded=1",
        std::string("/api/runs?limit=10")}) {
    httplib::Result res = client_->Get(path.c_str());
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    // Strict JSON: the parser refuses NaN and Infinity tokens, which a writer that printed
    // non-finite doubles as numbers would produce.
    EXPECT_FALSE(json::parse(res->body, nullptr, /*allow_exceptions=*/false).is_discarded())
        << path << ": " << res->body.substr(0, 300);
  }
  json run = Get("/api/runs/" + id, 200);
  EXPECT_TRUE(run["nonfinite"]["listed"][1]["loss"].is_null());
  EXPECT_EQ(run["segments"][1]["trainer_message"], webtest::DivergedMessage());
}

}  // namespace
}  // namespace baton

namespace baton {
namespace {

// MFU: achieved model FLOP/s (tokens/s x 6 x linear weights per token) over the configured peak;
// null when the config states no peak.
TEST(RunProfile, MfuFromTheConfigsModelSizeAndDevicePeak) {
  const std::string config =
      "model: {dim: 64, layers: 2, ffn_dim: 256}\ntrain: {device_peak_tflops: 0.001}\n";
  const ProfileModel m = ProfileModelFromConfig(config);
  EXPECT_DOUBLE_EQ(m.flops_per_token, 6.0 * 2 * (6.0 * 64 * 64 + 2.0 * 64 * 256));
  EXPECT_DOUBLE_EQ(m.peak_flops, 1e9);
  std::vector<MicrostepRecord> micro(2);
  for (auto& r : micro) r.attempt_id = 7;
  micro[0].step = 0, micro[0].tokens = 300, micro[0].fwd_bwd_s = 0.5;
  micro[1].step = 1, micro[1].tokens = 100, micro[1].fwd_bwd_s = 0.5;
  const nlohmann::json out = ProfileJson(micro, {{7, 1}}, m);
  ASSERT_EQ(out["attempts"].size(), 1u);
  EXPECT_NEAR(out["attempts"][0]["mfu"].get<double>(), 400.0 * m.flops_per_token / 1e9, 1e-12);
  EXPECT_EQ(out["device_peak_flops"].get<double>(), 1e9);

  const nlohmann::json unknown =
      ProfileJson(micro, {{7, 1}}, ProfileModelFromConfig("model: {dim: 64, layers: 2, ffn_dim: 256}\n"));
  EXPECT_TRUE(unknown["attempts"][0]["mfu"].is_null());
  EXPECT_TRUE(unknown["device_peak_flops"].is_null());
}

}  // namespace
}  // namespace baton
