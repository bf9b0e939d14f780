// `baton alerts test` (one test message to each sink of the lab's rules, or of a run config's
// with --config, sent now and not through the outbox: the answer is what a user checks) and
// `baton incidents [RUN] [--json]` (the incidents of every run or one, newest first, with their
// deliveries). Single-threaded.
#include <iostream>
#include <memory>

#include "orchestrator/alerts/alert_message.h"
#include "orchestrator/alerts/alert_pass.h"
#include "orchestrator/alerts/alert_sender.h"
#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/store/store_alerts.h"
#include "schema/clock.h"
#include "schema/exit_codes.h"
#include "schema/run_config.h"

namespace baton {

namespace {

int RunAlertsTest(const std::string& config_path) {
  Result<AlertsSection> rules = LoadLabAlertRules();
  if (!config_path.empty()) {
    Result<RunConfig> config = LoadRunConfig(config_path);
    if (!config.ok()) return ReportError(config.status());
    rules = LoadRunAlerts(config_path);
  }
  if (!rules.ok()) return ReportError(rules.status());
  if (rules->sinks.empty()) {
    return ReportError(Status::Config(
        (config_path.empty() ? BatonHome() + "/alerts.yaml" : config_path + ": alerts") +
        ": no sinks to test"));
  }
  int failed = 0;
  Status last;
  for (const AlertSink& sink : rules->sinks) {
    const Status st = SendAlert(sink, TestMessage(sink.name, UnixTimeNow()));
    if (st.ok()) {
      std::cout << "sink '" << sink.name << "' (" << SinkTypeName(sink.type) << "): delivered\n";
    } else {
      std::cout << "sink '" << sink.name << "' (" << SinkTypeName(sink.type)
                << "): FAILED: " << st.message() << "\n";
      ++failed;
      last = st;
    }
  }
  if (failed == 0) return kExitOk;
  return ReportError(last.Annotate(std::to_string(failed) + " of " +
                                   std::to_string(rules->sinks.size()) + " sinks failed"));
}

std::string DeliveryText(const std::vector<DeliveryRecord>& ds) {
  int64_t sent = 0;
  for (const DeliveryRecord& d : ds) sent += d.state == "sent" ? 1 : 0;
  return std::to_string(sent) + "/" + std::to_string(ds.size()) + " sent";
}

int RunIncidents(const std::string& run, bool json) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  std::optional<int64_t> run_id;
  if (!run.empty()) {
    Result<RunRecord> r = (*store)->FindRun(run);
    if (!r.ok()) return ReportError(r.status());
    run_id = r->id;
  }
  Result<std::vector<IncidentRecord>> incidents = ListIncidents(**store, run_id);
  if (!incidents.ok()) return ReportError(incidents.status());
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  for (const IncidentRecord& i : *incidents) {
    Result<std::vector<DeliveryRecord>> ds = ListDeliveries(**store, i.id);
    if (!ds.ok()) return ReportError(ds.status());
    out.push_back(IncidentJson(i, *ds));
    rows.push_back({std::to_string(i.id), std::to_string(i.run_id), i.kind, i.outcome,
                    i.attempt_label.empty() ? "-" : i.attempt_label, FormatTime(i.opened_at),
                    DeliveryText(*ds), i.cause.substr(0, 100)});
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
  } else {
    PrintTable(std::cout,
               {"ID", "RUN", "KIND", "OUTCOME", "ATTEMPT", "OPENED", "DELIVERIES", "CAUSE"}, rows);
  }
  return kExitOk;
}

}  // namespace

void AddAlertsCommands(CLI::App& app, int* rc) {
  CLI::App* alerts = app.add_subcommand("alerts", "Alert sinks ($BATON_HOME/alerts.yaml)");
  alerts->require_subcommand(1);
  auto config = std::make_shared<std::string>();
  CLI::App* test = alerts->add_subcommand("test", "Send one test message to each sink now");
  test->add_option("--config", *config, "The sinks of this run config's alerts: section instead");
  test->callback([config, rc] { *rc = RunAlertsTest(*config); });

  auto run = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* inc = app.add_subcommand("incidents", "List incidents and their alert deliveries");
  inc->add_option("run", *run, "A run id or name (default: every run)");
  inc->add_flag("--json", *json, "JSON, with each delivery");
  inc->callback([run, json, rc] { *rc = RunIncidents(*run, *json); });
}

}  // namespace baton
