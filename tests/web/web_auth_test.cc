// `baton serve --auth tokens|proxy` over HTTP (the real server on a loopback port): reads need an
// identity (401), the write routes act for the run's owner or an admin (403 otherwise) through
// the CLI's cancel and resume code, every answered action is audited and listed, a token never
// counts from the URL of a write, and the proxy's header counts only from a trusted address. The
// SLURM behind the actions is the fake one (the shared dev cluster's job ids are not ours).
#include <filesystem>
#include <fstream>

#include "orchestrator/http/request_identity.h"
#include "orchestrator/http/run_action_service.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/store/store_audit.h"
#include "orchestrator/store/store_internal.h"
#include "orchestrator/store/store_tokens.h"
#include "web_test_fixture.h"

namespace baton {
namespace {

class WebAuth : public WebHttp {
 protected:
  void SetUp() override {
    WebHttp::SetUp();
    // The live run is alice's; the demo run has no owner (submitted before owners were kept).
    ASSERT_TRUE(StoreInternal::Db(*store_)
                    .Exec("UPDATE runs SET owner = 'alice' WHERE id = " + std::to_string(xss_))
                    .ok());
    alice_ = AddApiToken(*store_, "alice", false, 1).value();
    bob_ = AddApiToken(*store_, "bob", false, 1).value();
    admin_ = AddApiToken(*store_, "boss", true, 1).value();
  }
  void StartWith(AuthOptions auth) {
    identity_ = std::make_unique<RequestIdentity>(std::move(auth), pool_.get());
    actions_ = std::make_unique<RunActionService>(RunActionDeps{[this] { return Store::Open(db_); },
                                                                &slurm_, "/opt/bin/baton", "",
                                                                [] { return 1.7e9 + 20000; }});
    service_->set_write_actions(true);
    ServerOptions o;
    o.port = 0;
    o.identity = identity_.get();
    o.actions = actions_.get();
    server_ = std::make_unique<HttpServer>(service_.get(), o);
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { (void)server_->Listen(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    for (int i = 0; i < 200; ++i) {
      if (client_->Get("/")) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void StartTokens() { StartWith(AuthOptions{AuthMode::kTokens, "", {}, {}}); }
  static httplib::Headers Bearer(const std::string& token) {
    return {{"Authorization", "Bearer " + token}};
  }
  // POST with no body (raw: exactly what a browser's fetch sends), the status and JSON body.
  std::pair<int, nlohmann::json> Post(const std::string& path, const std::string& headers) {
    RawResponse r =
        Exchange(server_->port(), "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n" +
                                      headers + "Connection: close\r\n\r\n");
    return {r.status, nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false)};
  }
  std::string Auth(const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; }
  std::vector<RunActionRecord> Audit(int64_t run) {
    return ListRunActions(*store_, run, 100).value();
  }
  // run.yaml and sbatch.sh in the run's folder, as `baton submit` leaves them (resume reads both).
  void WriteRunFiles(int64_t run) {
    const RunRecord r = store_->GetRun(run).value();
    std::filesystem::create_directories(tmp_ / "data");
    std::ofstream(r.run_dir + "/run.yaml")
        << "run: {name: live, steps: 100}\ndata: {path: " << (tmp_ / "data") << "}\n";
    std::ofstream(r.run_dir + "/sbatch.sh") << "#!/bin/bash\n";
  }

  FakeSlurmClient slurm_;
  std::unique_ptr<RequestIdentity> identity_;
  std::unique_ptr<RunActionService> actions_;
  std::string alice_, bob_, admin_;
};

TEST_F(WebAuth, ReadsNeedAnyUsersToken) {
  StartTokens();
  Get("/api/runs", 401);
  Get("/api/runs", 401, Bearer("not-a-token"));
  Get("/api/runs", 401, Bearer(alice_ + "0"));
  EXPECT_EQ(Get("/api/runs", 200, Bearer(bob_))["page"]["total"], 2);
  EXPECT_TRUE(Get("/api/runs/" + std::to_string(xss_), 200, Bearer(alice_)).is_object());
  // A link (CSV download) cannot carry a header: a read takes ?token= too.
  Get("/api/runs?token=" + bob_, 200);
  // The UI's own files carry no data and need none.
  EXPECT_EQ(client_->Get("/")->status, 200);
}

TEST_F(WebAuth, OnlyTheOwnerOrAnAdminCancels) {
  StartTokens();
  const std::string path = "/api/runs/" + std::to_string(xss_) + "/cancel";
  EXPECT_EQ(Post(path, "").first, 401);
  EXPECT_TRUE(Audit(xss_).empty());  // no identity: nobody to audit

  auto [status, body] = Post(path, Auth(bob_));
  EXPECT_EQ(status, 403) << body;
  EXPECT_EQ(body["error"]["code"], "forbidden");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("only its owner"), std::string::npos);
  EXPECT_TRUE(slurm_.cancelled.empty());
  EXPECT_EQ(store_->GetRun(xss_).value().status, RunStatus::kRunning);

  std::tie(status, body) = Post(path, Auth(alice_));
  EXPECT_EQ(status, 200) << body;
  EXPECT_EQ(body["status"], "CANCELLED");
  EXPECT_EQ(body["changed"], true);
  const RunRecord run = store_->GetRun(xss_).value();
  EXPECT_EQ(run.status, RunStatus::kCancelled);
  EXPECT_EQ(slurm_.cancelled, std::vector<std::string>{run.job_id});
  // The CLI's cancel path: the folder's mark says who asked.
  std::ifstream mark(RunFolder{run.run_dir}.CancelMark());
  std::string text((std::istreambuf_iterator<char>(mark)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("alice from the web page"), std::string::npos) << text;

  const std::vector<RunActionRecord> audit = Audit(xss_);
  ASSERT_EQ(audit.size(), 2u);
  EXPECT_EQ(audit[0].user, "alice");
  EXPECT_EQ(audit[0].result, "ok");
  EXPECT_EQ(audit[0].http_status, 200);
  EXPECT_EQ(audit[0].source, "web");
  EXPECT_EQ(audit[0].action, "cancel");
  EXPECT_DOUBLE_EQ(audit[0].asked_at, 1.7e9 + 20000);
  EXPECT_EQ(audit[1].user, "bob");
  EXPECT_EQ(audit[1].result, "denied");
  EXPECT_EQ(audit[1].http_status, 403);

  // The run page's list, newest first.
  const nlohmann::json list =
      Get("/api/runs/" + std::to_string(xss_) + "/actions", 200, Bearer(bob_));
  EXPECT_EQ(list["write_actions"], true);
  ASSERT_EQ(list["actions"].size(), 2u);
  EXPECT_EQ(list["actions"][0]["user"], "alice");
  EXPECT_EQ(list["actions"][1]["result"], "denied");
  EXPECT_EQ(list["page"]["total"], 2);
}

TEST_F(WebAuth, AnAdminActsOnEveryRunAndResumeGoesThroughTheResumer) {
  StartTokens();
  const std::string run = std::to_string(xss_);
  // An ownerless run is the admins' only.
  EXPECT_EQ(Post("/api/runs/" + std::to_string(demo_) + "/cancel", Auth(alice_)).first, 403);
  ASSERT_EQ(Post("/api/runs/" + run + "/cancel", Auth(admin_)).first, 200);
  WriteRunFiles(xss_);
  // Resume: bob may not, alice (the owner) may; a new job, the run PENDING again.
  EXPECT_EQ(Post("/api/runs/" + run + "/resume", Auth(bob_)).first, 403);
  auto [status, body] = Post("/api/runs/" + run + "/resume", Auth(alice_));
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(body["previous_status"], "CANCELLED");
  EXPECT_EQ(slurm_.submitted.size(), 1u);
  const RunRecord r = store_->GetRun(xss_).value();
  EXPECT_EQ(r.status, RunStatus::kPending);
  EXPECT_EQ(r.job_id, body["job_id"]);
  EXPECT_EQ(r.cluster, "fake");  // the fake SLURM's ClusterName
  // A failed action is audited as an error with the resumer's words (a PENDING run's job is
  // waiting, so resume takes it back; COMPLETED is refused).
  ASSERT_TRUE(StoreInternal::Db(*store_)
                  .Exec("UPDATE runs SET status = 'COMPLETED' WHERE id = " + run)
                  .ok());
  std::tie(status, body) = Post("/api/runs/" + run + "/resume", Auth(alice_));
  EXPECT_EQ(status, 400) << body;
  const std::vector<RunActionRecord> audit = Audit(xss_);
  ASSERT_GE(audit.size(), 4u);
  EXPECT_EQ(audit[0].result, "error");
  EXPECT_NE(audit[0].message.find("COMPLETED"), std::string::npos) << audit[0].message;
  EXPECT_EQ(audit[1].result, "ok");
  EXPECT_EQ(audit[1].action, "resume");
  EXPECT_EQ(audit.back().user, "boss");
}

TEST_F(WebAuth, AWriteTakesItsTokenFromTheHeaderOnly) {
  StartTokens();
  const std::string path = "/api/runs/" + std::to_string(xss_) + "/cancel";
  EXPECT_EQ(Post(path + "?token=" + alice_, "").first, 401);
  EXPECT_EQ(Post(path, "Cookie: token=" + alice_ + "\r\n").first, 401);
  EXPECT_EQ(Post(path + "?token=" + alice_, Auth(alice_)).first, 400);
  EXPECT_EQ(Post("/api/runs/999/cancel", Auth(admin_)).first, 404);
  EXPECT_EQ(Post("/api/runs/abc/resume", Auth(admin_)).first, 404);
  EXPECT_EQ(store_->GetRun(xss_).value().status, RunStatus::kRunning);
  // Other writes stay 405.
  EXPECT_EQ(Post("/api/runs/" + std::to_string(xss_), Auth(alice_)).first, 405);
  // A POST without a Content-Length is answered, not waited on.
  RawResponse r =
      Exchange(server_->port(), "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + Auth(bob_) + "\r\n");
  EXPECT_EQ(r.status, 403) << r.body;
}

TEST_F(WebAuth, TheProxyHeaderCountsOnlyFromATrustedAddress) {
  StartWith(AuthOptions{AuthMode::kProxy, "X-Remote-User", {"127.0.0.1"}, {"boss"}});
  const std::string path = "/api/runs/" + std::to_string(xss_) + "/cancel";
  Get("/api/runs", 401);
  EXPECT_EQ(Get("/api/runs", 200, {{"X-Remote-User", "bob"}})["page"]["total"], 2);
  Get("/api/runs", 401, Bearer(alice_));  // tokens are not this mode's
  const std::string from_page = "X-Requested-With: baton\r\n";
  // A cross-site form can carry the proxy's session but not this header.
  EXPECT_EQ(Post(path, "X-Remote-User: alice\r\n").first, 403);
  EXPECT_EQ(Post(path, "X-Remote-User: bob\r\n" + from_page).first, 403);
  EXPECT_EQ(Post(path, "X-Remote-User: alice\r\n" + from_page).first, 200);
  const std::vector<RunActionRecord> audit = Audit(xss_);
  ASSERT_EQ(audit.size(), 2u);  // the missing-header refusal had no run action yet
  EXPECT_EQ(audit[0].user, "alice");
  EXPECT_EQ(audit[1].user, "bob");
}

TEST_F(WebAuth, TheProxyHeaderFromAnUntrustedAddressIsIgnored) {
  // Only 10.1.2.3 is the proxy; this client connects from 127.0.0.1.
  StartWith(AuthOptions{AuthMode::kProxy, "X-Remote-User", {"10.1.2.3"}, {}});
  Get("/api/runs", 401, {{"X-Remote-User", "alice"}});
  EXPECT_EQ(Post("/api/runs/" + std::to_string(xss_) + "/cancel",
                 "X-Remote-User: alice\r\nX-Requested-With: baton\r\n")
                .first,
            401);
  EXPECT_EQ(store_->GetRun(xss_).value().status, RunStatus::kRunning);
  EXPECT_TRUE(Audit(xss_).empty());
}

TEST_F(WebAuth, WithoutAuthTheServerIsReadOnlyAsBefore) {
  Start();  // no --auth, no token: the single-user default
  Get("/api/runs", 200);
  EXPECT_EQ(Post("/api/runs/" + std::to_string(xss_) + "/cancel", "").first, 405);
  EXPECT_EQ(Get("/api/runs/" + std::to_string(xss_) + "/actions", 200)["write_actions"], false);
  EXPECT_EQ(store_->GetRun(xss_).value().status, RunStatus::kRunning);
}

}  // namespace
}  // namespace baton
