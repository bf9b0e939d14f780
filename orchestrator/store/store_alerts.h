// The store's incidents and alert outbox (tables incidents and alert_deliveries, docs/alerts.md).
// The alerts unit (orchestrator/alerts/) decides what an incident is and what a message says;
// this unit keeps them durable: an incident per (run, kind, first attempt), updated when the same
// cause comes back, and one outbox row per message and sink that stays pending until the sink
// confirmed it. A delivery is claimed with a lease (next_try_at moved ahead) so two processes
// never send the same row at once; a process killed mid-send leaves it pending, to be sent again.
//
// Part of the store, the only code that speaks SQL. Free functions over a Store the caller owns;
// the *InTx ones expect the caller's Write() transaction. Thread-compatible, like the Store.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

struct IncidentRecord {
  int64_t id = 0;
  int64_t run_id = 0;
  std::string kind;
  int64_t first_attempt_id = 0;  // 0: none
  int64_t last_attempt_id = 0;
  int64_t occurrences = 1;
  std::string outcome = "open";  // open | recovered | failed | closed | final
  std::string cause;
  std::string attempt_label;  // J.R.S
  std::optional<int64_t> step;
  std::string node;
  std::string rank;
  std::string excerpt;
  double opened_at = 0;
  double updated_at = 0;
};

struct DeliveryRecord {
  int64_t id = 0;
  int64_t incident_id = 0;
  int64_t message_seq = 1;  // 1: the incident, 2: its follow-up
  std::string sink_name;
  std::string sink_json;
  std::string idempotency_key;
  std::string body;
  std::string state = "pending";  // pending | sent
  int64_t tries = 0;
  double next_try_at = 0;
  std::string last_error;
  double created_at = 0;
  std::optional<double> sent_at;
};

// The JSON form `baton incidents --json` and GET /api/runs/{id}/incidents share.
nlohmann::json IncidentJson(const IncidentRecord& i, const std::vector<DeliveryRecord>& deliveries);

// "<incident id>.<message seq>": the Baton-Incident header and the body's idempotency_key.
std::string IdempotencyKey(int64_t incident_id, int64_t message_seq);

// What RecordIncidentInTx did: opened a new incident (messages are due), or updated the open one
// of the same run and kind (nothing to send), or found it already resolved (nothing either).
struct IncidentUpsert {
  IncidentRecord incident;
  bool opened = false;
};

// `seen` (id ignored) as an incident. An open incident of the same run and kind takes the new
// attempt (last_attempt_id, occurrences + 1 when the attempt is new); else a row keyed by
// (run, kind, first attempt) is inserted unless it exists (then returned as it is).
[[nodiscard]] Result<IncidentUpsert> RecordIncidentInTx(Store& store, const IncidentRecord& seen,
                                                        double now);
// Sets the outcome of an open incident; false when it was no longer open.
[[nodiscard]] Result<bool> ResolveIncidentInTx(Store& store, int64_t incident_id,
                                               const std::string& outcome, double now);
// Queues one message (ON CONFLICT of incident, seq and sink: nothing, it is queued already).
[[nodiscard]] Status QueueDeliveryInTx(Store& store, const DeliveryRecord& d);

// Newest first; one run's when run_id is given.
[[nodiscard]] Result<std::vector<IncidentRecord>> ListIncidents(Store& store,
                                                                std::optional<int64_t> run_id,
                                                                int64_t limit = 1000);
[[nodiscard]] Result<std::vector<IncidentRecord>> ListOpenIncidents(Store& store);
[[nodiscard]] Result<std::vector<DeliveryRecord>> ListDeliveries(Store& store, int64_t incident_id);

// The oldest pending delivery due at `now`, leased until now + lease_s (so no other process sends
// it meanwhile); nullopt when none is due.
[[nodiscard]] Result<std::optional<DeliveryRecord>> ClaimDueDelivery(Store& store, double now,
                                                                     double lease_s);
[[nodiscard]] Status MarkDeliverySent(Store& store, int64_t delivery_id, double now);
// Another try at `next_try_at`, with the error in words (never a URL).
[[nodiscard]] Status MarkDeliveryFailed(Store& store, int64_t delivery_id, const std::string& error,
                                        double next_try_at);

}  // namespace baton
