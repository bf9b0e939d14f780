#include "orchestrator/store/store_alerts.h"

#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

constexpr const char* kIncidentColumns =
    "id, run_id, kind, first_attempt_id, last_attempt_id, occurrences, outcome, cause, "
    "attempt_label, step, node, rank_text, excerpt, opened_at, updated_at";

IncidentRecord ReadIncident(const Statement& r) {
  IncidentRecord i;
  i.id = r.Int(0);
  i.run_id = r.Int(1);
  i.kind = r.Text(2);
  i.first_attempt_id = r.Int(3);
  i.last_attempt_id = r.Int(4);
  i.occurrences = r.Int(5);
  i.outcome = r.Text(6);
  i.cause = r.Text(7);
  i.attempt_label = r.Text(8);
  i.step = r.OptInt(9);
  i.node = r.Text(10);
  i.rank = r.Text(11);
  i.excerpt = r.Text(12);
  i.opened_at = r.Double(13);
  i.updated_at = r.Double(14);
  return i;
}

constexpr const char* kDeliveryColumns =
    "id, incident_id, message_seq, sink_name, sink_json, idempotency_key, body, state, tries, "
    "next_try_at, last_error, created_at, sent_at";

DeliveryRecord ReadDelivery(const Statement& r) {
  DeliveryRecord d;
  d.id = r.Int(0);
  d.incident_id = r.Int(1);
  d.message_seq = r.Int(2);
  d.sink_name = r.Text(3);
  d.sink_json = r.Text(4);
  d.idempotency_key = r.Text(5);
  d.body = r.Text(6);
  d.state = r.Text(7);
  d.tries = r.Int(8);
  d.next_try_at = r.Double(9);
  d.last_error = r.Text(10);
  d.created_at = r.Double(11);
  d.sent_at = r.OptDouble(12);
  return d;
}

Result<std::optional<IncidentRecord>> OneIncident(Statement* s) {
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  std::optional<IncidentRecord> out;
  if (row) out = ReadIncident(*s);
  s->Reset();
  return out;
}

}  // namespace

nlohmann::json IncidentJson(const IncidentRecord& i, const std::vector<DeliveryRecord>& ds) {
  nlohmann::json deliveries = nlohmann::json::array();
  for (const DeliveryRecord& d : ds) {
    deliveries.push_back({{"sink", d.sink_name},
                          {"message_seq", d.message_seq},
                          {"idempotency_key", d.idempotency_key},
                          {"state", d.state},
                          {"tries", d.tries},
                          {"last_error", d.last_error},
                          {"sent_at", d.sent_at ? nlohmann::json(*d.sent_at) : nlohmann::json()}});
  }
  return {{"id", i.id},
          {"run_id", i.run_id},
          {"kind", i.kind},
          {"outcome", i.outcome},
          {"cause", i.cause},
          {"attempt", i.attempt_label},
          {"step", i.step ? nlohmann::json(*i.step) : nlohmann::json()},
          {"node", i.node},
          {"rank", i.rank},
          {"occurrences", i.occurrences},
          {"excerpt", i.excerpt},
          {"opened_at", i.opened_at},
          {"updated_at", i.updated_at},
          {"deliveries", deliveries}};
}

std::string IdempotencyKey(int64_t incident_id, int64_t message_seq) {
  return std::to_string(incident_id) + "." + std::to_string(message_seq);
}

Result<IncidentUpsert> RecordIncidentInTx(Store& store, const IncidentRecord& seen, double now) {
  Db& db = StoreInternal::Db(store);
  BATON_ASSIGN_OR_RETURN(
      Statement * open,
      db.Prepare(std::string("SELECT ") + kIncidentColumns +
                 " FROM incidents WHERE run_id = ? AND kind = ? AND outcome = 'open' "
                 "ORDER BY id DESC LIMIT 1"));
  open->Bind(1, seen.run_id).Bind(2, seen.kind);
  BATON_ASSIGN_OR_RETURN(std::optional<IncidentRecord> current, OneIncident(open));
  if (current && seen.first_attempt_id >= current->first_attempt_id) {
    if (seen.first_attempt_id > current->last_attempt_id) {
      BATON_ASSIGN_OR_RETURN(
          Statement * up,
          db.Prepare("UPDATE incidents SET last_attempt_id = ?, occurrences = occurrences + 1, "
                     "updated_at = ? WHERE id = ?"));
      BATON_RETURN_IF_ERROR(
          up->Bind(1, seen.first_attempt_id).Bind(2, now).Bind(3, current->id).Run());
      current->last_attempt_id = seen.first_attempt_id;
      current->occurrences += 1;
      current->updated_at = now;
    }
    return IncidentUpsert{*current, false};
  }
  // An attempt an incident already covers (one that was resolved since) opens nothing new.
  BATON_ASSIGN_OR_RETURN(
      Statement * covered,
      db.Prepare(std::string("SELECT ") + kIncidentColumns +
                 " FROM incidents WHERE run_id = ? AND kind = ? AND first_attempt_id <= ? AND "
                 "last_attempt_id >= ? ORDER BY id LIMIT 1"));
  covered->Bind(1, seen.run_id)
      .Bind(2, seen.kind)
      .Bind(3, seen.first_attempt_id)
      .Bind(4, seen.first_attempt_id);
  BATON_ASSIGN_OR_RETURN(std::optional<IncidentRecord> old, OneIncident(covered));
  if (old) return IncidentUpsert{*old, false};
  BATON_ASSIGN_OR_RETURN(
      Statement * ins,
      db.Prepare("INSERT INTO incidents (run_id, kind, first_attempt_id, last_attempt_id, "
                 "occurrences, outcome, cause, attempt_label, step, node, rank_text, excerpt, "
                 "opened_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT (run_id, kind, first_attempt_id) DO NOTHING RETURNING id"));
  ins->Bind(1, seen.run_id)
      .Bind(2, seen.kind)
      .Bind(3, seen.first_attempt_id)
      .Bind(4, seen.first_attempt_id)
      .Bind(5, seen.outcome)
      .Bind(6, seen.cause)
      .Bind(7, seen.attempt_label)
      .Bind(8, seen.step)
      .Bind(9, seen.node)
      .Bind(10, seen.rank)
      .Bind(11, seen.excerpt)
      .Bind(12, now)
      .Bind(13, now);
  BATON_ASSIGN_OR_RETURN(const bool inserted, ins->Step());
  IncidentUpsert out{seen, inserted};
  if (inserted) {
    out.incident.id = ins->Int(0);
    out.incident.last_attempt_id = seen.first_attempt_id;
    out.incident.opened_at = out.incident.updated_at = now;
    ins->Reset();
    return out;
  }
  ins->Reset();
  BATON_ASSIGN_OR_RETURN(Statement * find,
                         db.Prepare(std::string("SELECT ") + kIncidentColumns +
                                    " FROM incidents WHERE run_id = ? AND kind = ? AND "
                                    "first_attempt_id = ?"));
  find->Bind(1, seen.run_id).Bind(2, seen.kind).Bind(3, seen.first_attempt_id);
  BATON_ASSIGN_OR_RETURN(std::optional<IncidentRecord> existing, OneIncident(find));
  if (!existing) return Status::Internal("incident vanished inside its transaction");
  return IncidentUpsert{*existing, false};
}

Result<bool> ResolveIncidentInTx(Store& store, int64_t incident_id, const std::string& outcome,
                                 double now) {
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(
                                            "UPDATE incidents SET outcome = ?, updated_at = ? "
                                            "WHERE id = ? AND outcome = 'open' RETURNING id"));
  s->Bind(1, outcome).Bind(2, now).Bind(3, incident_id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  s->Reset();
  return row;
}

Status QueueDeliveryInTx(Store& store, const DeliveryRecord& d) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare(
          "INSERT INTO alert_deliveries (incident_id, message_seq, sink_name, sink_json, "
          "idempotency_key, body, state, tries, next_try_at, created_at) "
          "VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?) "
          "ON CONFLICT (incident_id, message_seq, sink_name) DO NOTHING"));
  return s->Bind(1, d.incident_id)
      .Bind(2, d.message_seq)
      .Bind(3, d.sink_name)
      .Bind(4, d.sink_json)
      .Bind(5, IdempotencyKey(d.incident_id, d.message_seq))
      .Bind(6, d.body)
      .Bind(7, d.next_try_at)
      .Bind(8, d.created_at)
      .Run();
}

Result<std::vector<IncidentRecord>> ListIncidents(Store& store, std::optional<int64_t> run_id,
                                                  int64_t limit) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s, StoreInternal::Db(store).Prepare(
                         std::string("SELECT ") + kIncidentColumns +
                         " FROM incidents WHERE (? = 0 OR run_id = ?) ORDER BY id DESC LIMIT ?"));
  s->Bind(1, int64_t{run_id ? 1 : 0}).Bind(2, run_id.value_or(0)).Bind(3, limit);
  return s->Collect<IncidentRecord>(ReadIncident);
}

Result<std::vector<IncidentRecord>> ListOpenIncidents(Store& store) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s, StoreInternal::Db(store).Prepare(std::string("SELECT ") + kIncidentColumns +
                                                      " FROM incidents WHERE outcome = "
                                                      "'open' ORDER BY id"));
  return s->Collect<IncidentRecord>(ReadIncident);
}

Result<std::vector<DeliveryRecord>> ListDeliveries(Store& store, int64_t incident_id) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare(std::string("SELECT ") + kDeliveryColumns +
                                       " FROM alert_deliveries WHERE incident_id = ? ORDER BY id"));
  s->Bind(1, incident_id);
  return s->Collect<DeliveryRecord>(ReadDelivery);
}

Result<std::optional<DeliveryRecord>> ClaimDueDelivery(Store& store, double now, double lease_s) {
  Db& db = StoreInternal::Db(store);
  std::optional<DeliveryRecord> out;
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(
        Statement * s,
        db.Prepare(std::string("UPDATE alert_deliveries SET next_try_at = ? WHERE id = "
                               "(SELECT id FROM alert_deliveries WHERE state = 'pending' AND "
                               "next_try_at <= ? ORDER BY next_try_at, id LIMIT 1) RETURNING ") +
                   kDeliveryColumns));
    s->Bind(1, now + lease_s).Bind(2, now);
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (row) out = ReadDelivery(*s);
    s->Reset();
    return Status::Ok();
  }));
  return out;
}

Status MarkDeliverySent(Store& store, int64_t delivery_id, double now) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare("UPDATE alert_deliveries SET state = 'sent', sent_at = ?, "
                                       "tries = tries + 1, last_error = '' WHERE id = ?"));
  return s->Bind(1, now).Bind(2, delivery_id).Run();
}

Status MarkDeliveryFailed(Store& store, int64_t delivery_id, const std::string& error,
                          double next_try_at) {
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(
                                            "UPDATE alert_deliveries SET tries = tries + 1, "
                                            "last_error = ?, next_try_at = ? WHERE id = ?"));
  return s->Bind(1, error).Bind(2, next_try_at).Bind(3, delivery_id).Run();
}

}  // namespace baton
