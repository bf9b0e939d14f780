// Skipped (non-finite) steps and the trainer's end message through the service and the server
// (web_test_fixture.h, the nonfinite-demo run): listed on the run, left out of the curves and
// marked, and every answer valid JSON with nulls for missing values.
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

#include "web_test_fixture.h"

using nlohmann::json;

namespace baton {
namespace {

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
  EXPECT_EQ(nf["listed"][1]["step_number"], 43);  // the CLI's "step 43 (attempt 2)"
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
  req.keys = {SeriesKey::kLr, SeriesKey::kLoss, SeriesKey::kLossVideo, SeriesKey::kGradNorm,
              SeriesKey::kTokensPerS};
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
  for (const std::string& path :
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
