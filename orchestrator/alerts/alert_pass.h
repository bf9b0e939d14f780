// The alerts pass of `baton watch` and `baton serve`: after each sync pass, read every active
// (and recently ended) run's history, record its incidents (incident_rules.h) and queue the
// messages each subscribed sink is owed in the store's outbox (store_alerts.h), all in one
// transaction per run; then a delivery loop on its own thread and connection sends what is due,
// so a slow or dead receiver never holds up ingest. Nothing here runs on a compute node.
//
// Who hears what: the lab's rules ($BATON_HOME/alerts.yaml) and the run's own `alerts:` section
// both apply, each with its own sinks and subscriptions (docs/alerts.md). A follow-up (seq 2)
// goes to exactly the sinks that were sent the incident.
//
// AlertPass and DeliverDue are thread-compatible over the Store they are given; AlertDelivery
// owns its thread and its own Store connection.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "orchestrator/store/store.h"
#include "orchestrator/store/store_alerts.h"
#include "schema/alerts_config.h"

namespace baton {

// Ended runs are followed this long for their last incidents and follow-ups.
inline constexpr double kAlertFollowEndedS = 86400;

// The lab's rules: $BATON_HOME/alerts.yaml (kConfig naming the file and key when it is bad).
[[nodiscard]] Result<AlertsSection> LoadLabAlertRules();

// Submit's check: the lab's rules read, and every reference of them and of the `alerts:`
// section of the run config at `config_path` resolves here and now. kConfig naming the file and
// sink.
[[nodiscard]] Status CheckAlertsAtSubmit(const std::string& config_path);

struct AlertPassReport {
  int64_t opened = 0;              // incidents opened this pass
  int64_t resolved = 0;            // incidents whose outcome changed
  int64_t queued = 0;              // messages put in the outbox
  std::vector<std::string> lines;  // one per opened or resolved incident, for the log
};

// One pass over the runs watch/serve follow. A run whose frozen config's alerts section cannot
// be read is skipped with a line (its incidents wait for a fixed config, nothing is dropped).
[[nodiscard]] Result<AlertPassReport> AlertPass(Store& store, const AlertsSection& lab, double now);

// Records `seen` (kind, run and attempt set by the caller, e.g. the node ledger's exclusion cap)
// as an incident and queues its message for the sinks subscribed to its kind; the next delivery
// loop sends it. Returns the incident (opened false when it was already known).
[[nodiscard]] Result<IncidentUpsert> RaiseIncident(Store& store, const IncidentRecord& seen,
                                                   const AlertsSection& lab, double now);

// Sends up to `max` due deliveries; returns how many were confirmed. `log` gets one line the
// first time a delivery fails and one when a failed one finally gets through.
[[nodiscard]] Result<int64_t> DeliverDue(Store& store, double now, int64_t max,
                                         const std::function<void(const std::string&)>& log);

// Seconds before try n + 1 of a failed delivery: 5, 10, 20, ... capped at 300.
double DeliveryBackoff(int64_t tries);

// The delivery loop: every `interval_s`, DeliverDue on its own connection to `db_path`.
class AlertDelivery {
 public:
  AlertDelivery(std::string db_path, double interval_s,
                std::function<void(const std::string&)> log);
  ~AlertDelivery();
  void Start();
  void Stop();  // waits for a delivery in flight (bounded by its sink's timeout)

 private:
  void Loop();
  std::string db_path_;
  double interval_s_;
  std::function<void(const std::string&)> log_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace baton
