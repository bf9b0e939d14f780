// Alerts: the rules' config (schema/alerts_config.h), what the incident rules see in a run's
// history (orchestrator/alerts/incident_rules.h), and the store's incidents and outbox
// (orchestrator/store/store_alerts.h) on a real SQLite file.
#include <gtest/gtest.h>

#include <cstdlib>

#include "orchestrator/alerts/alert_message.h"
#include "orchestrator/alerts/alert_pass.h"
#include "orchestrator/alerts/incident_rules.h"
#include "orchestrator/store/store_alerts.h"
#include "schema/alerts_config.h"
#include "schema/run_config.h"
#include "test_util.h"

namespace baton {
namespace {

using test::OpenStore;
using test::TempDir;

const char* kBase = "run: {name: a, steps: 5}\ndata: {path: /nonexistent}\n";

// The run config's checks, then the section itself, as submit reads it.
Result<AlertsSection> Parse(const std::string& alerts) {
  RunConfigOptions o;
  o.check_filesystem = false;
  const std::string text = std::string(kBase) + alerts;
  BATON_RETURN_IF_ERROR(ParseRunConfig(text, "cfg.yaml", o).status());
  return RunAlertsFromConfig(text, "cfg.yaml");
}

TEST(AlertsConfig, ReadsSinksAndSubscriptionsAndFreezesThem) {
  Result<AlertsSection> c = Parse(
      "alerts:\n  sinks:\n    - {name: lab, type: webhook, url: env:LAB_URL}\n"
      "    - {name: mail, type: email, to: a@b.org, sendmail: /bin/true}\n"
      "  subscribe: [hang, failed]\n  stall_s: 600\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->sinks.size(), 2u);
  EXPECT_EQ(c->sinks[0].url, "env:LAB_URL");
  EXPECT_EQ(c->sinks[1].type, SinkType::kEmail);
  EXPECT_EQ(c->subscribe, (std::vector<std::string>{"hang", "failed"}));
  EXPECT_EQ(c->stall_s, 600);
  // Frozen beside the run config's own text, and read back the same.
  RunConfigOptions o;
  o.check_filesystem = false;
  Result<RunConfig> base = ParseRunConfig(kBase, "cfg.yaml", o);
  ASSERT_TRUE(base.ok());
  const std::string frozen = AppendAlerts(ToYaml(*base), *c);
  ASSERT_TRUE(ParseRunConfig(frozen, "run.yaml", o).ok()) << frozen;
  Result<AlertsSection> again = RunAlertsFromConfig(frozen, "run.yaml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->sinks.size(), 2u);
  EXPECT_EQ(again->sinks[1].to, "a@b.org");
  EXPECT_EQ(again->subscribe, c->subscribe);
  EXPECT_EQ(again->stall_s, 600);
  // Without the section nothing is appended.
  Result<AlertsSection> none = Parse("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->present);
  EXPECT_EQ(AppendAlerts("run: {}\n", *none), "run: {}\n");
}

TEST(AlertsConfig, RefusesInlineUrlsUnknownKindsAndTypesNamingThem) {
  Result<AlertsSection> inline_url =
      Parse("alerts:\n  sinks: [{name: x, type: slack, url: https://hooks.example/T0/secret}]\n");
  ASSERT_FALSE(inline_url.ok());
  EXPECT_EQ(inline_url.status().exit_code(), 78);
  EXPECT_NE(inline_url.status().message().find("alerts.sinks[0].url"), std::string::npos);
  EXPECT_EQ(inline_url.status().message().find("secret"), std::string::npos);
  Result<AlertsSection> kind = Parse("alerts:\n  subscribe: [hang, oom]\n");
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("unknown incident kind 'oom'"), std::string::npos);
  Result<AlertsSection> type = Parse("alerts:\n  sinks: [{name: x, type: pager, url: env:X}]\n");
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().message().find("alerts.sinks[0].type"), std::string::npos);
  Result<AlertsSection> twice = Parse(
      "alerts:\n  sinks: [{name: x, type: webhook, url: env:X}, {name: x, type: webhook, "
      "url: env:Y}]\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("named twice"), std::string::npos);
  Result<AlertsSection> no_to = Parse("alerts:\n  sinks: [{name: m, type: email}]\n");
  ASSERT_FALSE(no_to.ok());
  EXPECT_NE(no_to.status().message().find("alerts.sinks[0].to"), std::string::npos);
}

TEST(AlertsConfig, ReferencesResolveOrNameThemselves) {
  TempDir tmp;
  ::setenv("BATON_TEST_ALERT_URL", "http://127.0.0.1:1/x", 1);
  ::unsetenv("BATON_TEST_UNSET");
  test::Append(tmp / "url", "http://127.0.0.1:2/y\n");
  EXPECT_EQ(ResolveReference("env:BATON_TEST_ALERT_URL").value(), "http://127.0.0.1:1/x");
  EXPECT_EQ(ResolveReference("file:" + (tmp / "url")).value(), "http://127.0.0.1:2/y");
  AlertsSection a;
  a.sinks.push_back({"lab", SinkType::kWebhook, "env:BATON_TEST_UNSET", "", "", 5});
  const Status st = CheckAlertReferences(a, "cfg.yaml");
  EXPECT_EQ(st.exit_code(), 78);
  EXPECT_NE(st.message().find("env:BATON_TEST_UNSET"), std::string::npos);
  EXPECT_NE(st.message().find("'lab'"), std::string::npos);
  Result<AlertsSection> lab = ParseAlertsText("subscribe: [stalled]\npublic_url: http://b/\n",
                                              "alerts.yaml", /*lab_file=*/true);
  ASSERT_TRUE(lab.ok()) << lab.status().ToString();
  EXPECT_EQ(lab->public_url, "http://b/");
}

AttemptRecord Attempt(int64_t id, const std::string& job, const std::string& end_reason) {
  AttemptRecord a;
  a.id = id;
  a.job_id = job;
  a.restart_count = id - 1;
  a.nodes = "n1,n2";
  a.started_at = 100;
  a.end_reason = end_reason;
  a.step0 = 0;
  a.last_step = 5;
  return a;
}

TEST(IncidentRules, SeesEachEndingAsItsKindWithItsEvidence) {
  RunView v;
  v.run.id = 3;
  v.run.status = RunStatus::kRequeued;
  AttemptRecord hang = Attempt(1, "40", "crashed");
  hang.hang_detected_at = 200;
  hang.hang_last_heartbeat_at = 80;
  hang.hang_stale_ranks = "2:micro-step";
  hang.hang_stack = std::string(3000, 's');
  v.attempts = {hang, Attempt(2, "41", "diverged"), Attempt(3, "42", "failure_budget"),
                Attempt(4, "43", "preempted")};
  v.attempts[2].hold_release_error = "Access denied";
  const std::vector<IncidentRecord> seen =
      ObserveRun(v, 1000, 1800, [](const AttemptRecord&) { return std::string("last line\n"); });
  std::vector<std::string> kinds;
  for (const IncidentRecord& i : seen) kinds.push_back(i.kind);
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"hang", "diverged", "budget_spent", "hold_release_refused"}));
  EXPECT_EQ(seen[0].attempt_label, "40.0.0");
  EXPECT_EQ(seen[0].rank, "2");
  EXPECT_EQ(seen[0].node, "n1");
  EXPECT_EQ(seen[0].excerpt.size(), kExcerptBytes);
  EXPECT_EQ(seen[1].excerpt, "last line\n");
}

TEST(IncidentRules, StalledWhileRunningAndRecoveredByAStep) {
  RunView v;
  v.run.id = 1;
  v.run.status = RunStatus::kRunning;
  v.attempts = {Attempt(1, "50", "")};
  v.last_step_time = 500;
  EXPECT_TRUE(ObserveRun(v, 1000, 600, nullptr).empty());
  const std::vector<IncidentRecord> seen = ObserveRun(v, 1200, 600, nullptr);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, "stalled");
  IncidentRecord open = seen[0];
  open.opened_at = 1200;
  EXPECT_FALSE(IncidentOutcome(open, v).has_value());
  v.last_step_time = 1300;
  EXPECT_EQ(IncidentOutcome(open, v).value(), "recovered");
  v.run.status = RunStatus::kFailed;
  EXPECT_EQ(IncidentOutcome(open, v).value(), "failed");
}

TEST(IncidentRules, AStopSaveOverTheGraceIsAnIncidentOnlyWhenSubmitMeasuredTheGrace) {
  RunView v;
  v.run.id = 2;
  v.run.status = RunStatus::kRequeued;
  v.attempts = {Attempt(1, "60", "preempted")};
  v.stop_saves = {{1, 40, 12.0}, {1, 80, 50.0}};
  EXPECT_TRUE(ObserveRun(v, 1000, 1800, nullptr).empty());  // no grace known: nothing to hold to
  v.grace_s = 35.0;
  const std::vector<IncidentRecord> seen = ObserveRun(v, 1000, 1800, nullptr);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, "stop_save_over_grace");
  EXPECT_EQ(seen[0].step, 80);
  EXPECT_EQ(seen[0].attempt_label, "60.0.0");
  EXPECT_NE(seen[0].cause.find("step 80"), std::string::npos) << seen[0].cause;
}

TEST(IncidentRules, ClipKeepsWholeCharacters) {
  const std::string text =
      "ab\xc3\xa9"
      "cd";  // "abécd"
  EXPECT_EQ(Clip(text, 3, false), "ab");
  EXPECT_EQ(Clip(text, 3, true), "cd");
  EXPECT_EQ(Clip(text, 4, true),
            "\xc3\xa9"
            "cd");
}

TEST(StoreAlerts, TheSameCauseAcrossRequeuesIsOneIncident) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const RunRecord run = test::MakeRun(*store, tmp / "r");
  IncidentRecord seen;
  seen.run_id = run.id;
  seen.kind = "hang";
  std::vector<IncidentUpsert> ups;
  for (int64_t attempt : {1, 2, 2, 3}) {
    seen.first_attempt_id = attempt;
    ASSERT_TRUE(store
                    ->Write([&]() -> Status {
                      BATON_ASSIGN_OR_RETURN(IncidentUpsert u,
                                             RecordIncidentInTx(*store, seen, 10.0 * attempt));
                      ups.push_back(u);
                      return Status::Ok();
                    })
                    .ok());
  }
  EXPECT_TRUE(ups[0].opened);
  EXPECT_FALSE(ups[1].opened || ups[2].opened || ups[3].opened);
  std::vector<IncidentRecord> all = ListIncidents(*store, run.id).value();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].occurrences, 3);
  EXPECT_EQ(all[0].last_attempt_id, 3);
  // Resolved: seeing its attempts again opens nothing; a new attempt with the cause does.
  ASSERT_TRUE(
      store->Write([&] { return ResolveIncidentInTx(*store, all[0].id, "recovered", 50).status(); })
          .ok());
  for (int64_t attempt : {2, 4}) {
    seen.first_attempt_id = attempt;
    ASSERT_TRUE(store->Write([&] { return RecordIncidentInTx(*store, seen, 60).status(); }).ok());
  }
  all = ListIncidents(*store, run.id).value();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].first_attempt_id, 4);
}

TEST(StoreAlerts, OutboxLeasesRetriesAndNeverResendsConfirmed) {
  TempDir tmp;
  auto store = OpenStore(tmp / "baton.db");
  const RunRecord run = test::MakeRun(*store, tmp / "r");
  IncidentRecord seen;
  seen.run_id = run.id;
  seen.kind = "failed";
  seen.outcome = "final";
  IncidentUpsert up;
  ASSERT_TRUE(store
                  ->Write([&]() -> Status {
                    BATON_ASSIGN_OR_RETURN(up, RecordIncidentInTx(*store, seen, 1));
                    DeliveryRecord d;
                    d.incident_id = up.incident.id;
                    d.sink_name = "lab";
                    d.sink_json = "{}";
                    d.body = "{}";
                    d.next_try_at = 1;
                    d.created_at = 1;
                    BATON_RETURN_IF_ERROR(QueueDeliveryInTx(*store, d));
                    return QueueDeliveryInTx(*store, d);  // queued once only
                  })
                  .ok());
  std::optional<DeliveryRecord> d = ClaimDueDelivery(*store, 10, 30).value();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->idempotency_key, IdempotencyKey(up.incident.id, 1));
  EXPECT_FALSE(ClaimDueDelivery(*store, 20, 30).value().has_value());  // leased
  ASSERT_TRUE(MarkDeliveryFailed(*store, d->id, "HTTP 500", 25).ok());
  EXPECT_FALSE(ClaimDueDelivery(*store, 24, 30).value().has_value());
  d = ClaimDueDelivery(*store, 26, 30).value();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->tries, 1);
  EXPECT_EQ(d->last_error, "HTTP 500");
  ASSERT_TRUE(MarkDeliverySent(*store, d->id, 27).ok());
  EXPECT_FALSE(ClaimDueDelivery(*store, 1e9, 30).value().has_value());
  const std::vector<DeliveryRecord> all = ListDeliveries(*store, up.incident.id).value();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, "sent");
  EXPECT_EQ(DeliveryBackoff(1), 5);
  EXPECT_EQ(DeliveryBackoff(3), 20);
  EXPECT_EQ(DeliveryBackoff(40), 300);
}

TEST(AlertMessage, CarriesTheKeyTheRunAndTheLink) {
  IncidentRecord i;
  i.id = 7;
  i.kind = "hang";
  i.cause = "hang in attempt 40.0.0\nsecond line";
  i.attempt_label = "40.0.0";
  RunRecord run;
  run.id = 3;
  run.name = "demo";
  run.owner = "alice";
  const nlohmann::json m = AlertMessage(i, run, 1, "http://baton.lab/");
  EXPECT_EQ(m["idempotency_key"], "7.1");
  EXPECT_EQ(m["url"], "http://baton.lab/#/runs/3");
  EXPECT_EQ(m["run"]["owner"], "alice");
  const std::string mail = EmailMessage(m, "x@y.org");
  EXPECT_NE(mail.find("Baton-Incident: 7.1\n"), std::string::npos);
  EXPECT_EQ(AlertSubject(m).find('\n'), std::string::npos);  // no header injection
}

}  // namespace
}  // namespace baton
