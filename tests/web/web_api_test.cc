// The web API's service against a temp database filled through the real path (web_test_fixture.h):
// the downsampler, the runs list, the timeline and audit figures of a 3-attempt run with a
// weights-only resume, the series and its superseded points, pagination, and the profile's MFU.
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

#include "orchestrator/http/run_profile.h"
#include "orchestrator/http/series_downsampler.h"
#include "web_test_fixture.h"

using nlohmann::json;

namespace baton {
namespace {

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
  // Effective step ranges as step numbers (the CLI's): indices [0, 300), [300, 400), [400, 600)
  // are steps 1..300, 301..400, 401..600; the warmups steps 1..100 and 401..419.
  EXPECT_EQ(s[0]["effective_first_step"], 1);
  EXPECT_EQ(s[0]["effective_last_step"], 300);
  EXPECT_EQ(s[1]["effective_first_step"], 301);
  EXPECT_EQ(s[1]["effective_last_step"], 400);
  EXPECT_EQ(s[2]["effective_last_step"], 600);
  EXPECT_EQ(s[0]["warmup_first_step"], 1);
  EXPECT_EQ(s[0]["warmup_last_step"], 100);
  EXPECT_TRUE(s[1]["warmup_first_step"].is_null());
  EXPECT_EQ(s[2]["warmup_first_step"], 401);
  EXPECT_EQ(s[2]["warmup_last_step"], 419);
  EXPECT_EQ(s[0]["attempt"], 1);
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
  req.keys = {SeriesKey::kLr, SeriesKey::kExpectedLr, SeriesKey::kLoss, SeriesKey::kPadding};
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
  req.keys = {SeriesKey::kLoss};
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
  req.keys = {SeriesKey::kLr};
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
  EXPECT_FALSE(service_->GetSeries(9999, SeriesRequest{{SeriesKey::kLr}}).ok());
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

  const nlohmann::json unknown = ProfileJson(
      micro, {{7, 1}}, ProfileModelFromConfig("model: {dim: 64, layers: 2, ffn_dim: 256}\n"));
  EXPECT_TRUE(unknown["attempts"][0]["mfu"].is_null());
  EXPECT_TRUE(unknown["device_peak_flops"].is_null());
}

}  // namespace
}  // namespace baton
