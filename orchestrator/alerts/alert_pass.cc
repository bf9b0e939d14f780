#include "orchestrator/alerts/alert_pass.h"

#include <algorithm>
#include <map>

#include "orchestrator/alerts/alert_message.h"
#include "orchestrator/alerts/alert_sender.h"
#include "orchestrator/alerts/incident_rules.h"
#include "orchestrator/store/attempt_evidence.h"
#include "orchestrator/store/stop_save_summary.h"
#include "schema/clock.h"

namespace baton {

namespace {

// The rule sets that apply to one run: the lab's, then the run's own.
struct RuleSets {
  std::vector<const AlertsSection*> sets;
  double stall_s = kDefaultStallS;
  std::string public_url;
};

Result<RunView> LoadView(Store& store, const RunRecord& run) {
  RunView v;
  v.run = run;
  BATON_ASSIGN_OR_RETURN(v.attempts, store.ListAttempts(run.id));
  int64_t last = 0;
  for (const AttemptRecord& a : v.attempts) last = std::max(last, a.last_step.value_or(0));
  if (last > 0) {
    StepQuery q;
    q.from_step = last - 1;
    q.limit = 8;
    BATON_ASSIGN_OR_RETURN(const std::vector<StepRecord> steps, store.ListSteps(run.id, q));
    for (const StepRecord& s : steps) {
      if (!v.last_step_time || s.time > *v.last_step_time) v.last_step_time = s.time;
    }
  }
  BATON_ASSIGN_OR_RETURN(const StopSaveSummary stop, ReadStopSaveSummary(store, run.id));
  if (stop.budget) v.grace_s = stop.budget->grace_s;
  for (const CheckpointRecord& c : stop.measured) {
    if (std::isfinite(c.seconds)) {
      v.stop_saves.push_back({c.attempt_id.value_or(0), c.step, c.seconds});
    }
  }
  return v;
}

std::function<std::string(const AttemptRecord&)> LogTailOf(const RunRecord& run) {
  return [dir = run.run_dir](const AttemptRecord& a) -> std::string {
    const std::optional<std::string> rel = AttemptLogPath(a);
    if (!rel || dir.empty()) return "";
    return LogTail(dir + "/" + *rel);
  };
}

bool Subscribed(const AlertsSection& s, const std::string& kind) {
  return std::find(s.subscribe.begin(), s.subscribe.end(), kind) != s.subscribe.end();
}

// Queues the incident's first message for every sink subscribed to its kind.
Result<int64_t> QueueOpened(Store& store, const IncidentRecord& i, const RunRecord& run,
                            const RuleSets& rules, double now) {
  const std::string body = AlertMessage(i, run, 1, rules.public_url).dump();
  int64_t queued = 0;
  for (const AlertsSection* set : rules.sets) {
    if (!Subscribed(*set, i.kind)) continue;
    for (const AlertSink& sink : set->sinks) {
      DeliveryRecord d;
      d.incident_id = i.id;
      d.message_seq = 1;
      d.sink_name = sink.name;
      d.sink_json = SinkJson(sink).dump();
      d.body = body;
      d.next_try_at = now;
      d.created_at = now;
      BATON_RETURN_IF_ERROR(QueueDeliveryInTx(store, d));
      ++queued;
    }
  }
  return queued;
}

// The follow-up goes where the incident went.
Result<int64_t> QueueFollowUp(Store& store, const IncidentRecord& i, const RunRecord& run,
                              const RuleSets& rules, double now) {
  BATON_ASSIGN_OR_RETURN(const std::vector<DeliveryRecord> sent, ListDeliveries(store, i.id));
  const std::string body = AlertMessage(i, run, 2, rules.public_url).dump();
  int64_t queued = 0;
  for (const DeliveryRecord& first : sent) {
    if (first.message_seq != 1) continue;
    DeliveryRecord d = first;
    d.message_seq = 2;
    d.body = body;
    d.next_try_at = now;
    d.created_at = now;
    BATON_RETURN_IF_ERROR(QueueDeliveryInTx(store, d));
    ++queued;
  }
  return queued;
}

Status PassOneRun(Store& store, const RunRecord& run, const RuleSets& rules,
                  const std::vector<IncidentRecord>& open, double now, AlertPassReport* report) {
  BATON_ASSIGN_OR_RETURN(const RunView view, LoadView(store, run));
  const std::vector<IncidentRecord> seen = ObserveRun(view, now, rules.stall_s, LogTailOf(run));
  return store.Write([&]() -> Status {
    for (IncidentRecord s : seen) {
      // Seen first after the run ended: its outcome is known, one message says both.
      if (s.outcome == "open" && IsTerminal(run.status)) s.outcome = *IncidentOutcome(s, view);
      BATON_ASSIGN_OR_RETURN(const IncidentUpsert up, RecordIncidentInTx(store, s, now));
      if (!up.opened) continue;
      ++report->opened;
      report->lines.push_back("run " + std::to_string(run.id) + " (" + run.name + "): incident " +
                              std::to_string(up.incident.id) + " " + s.kind + ": " + s.cause);
      BATON_ASSIGN_OR_RETURN(const int64_t q, QueueOpened(store, up.incident, run, rules, now));
      report->queued += q;
    }
    for (IncidentRecord i : open) {
      const std::optional<std::string> outcome = IncidentOutcome(i, view);
      if (!outcome) continue;
      BATON_ASSIGN_OR_RETURN(const bool changed, ResolveIncidentInTx(store, i.id, *outcome, now));
      if (!changed) continue;
      ++report->resolved;
      i.outcome = *outcome;
      report->lines.push_back("run " + std::to_string(run.id) + " (" + run.name + "): incident " +
                              std::to_string(i.id) + " " + i.kind + " " + *outcome);
      if (*outcome == "closed") continue;
      BATON_ASSIGN_OR_RETURN(const int64_t q, QueueFollowUp(store, i, run, rules, now));
      report->queued += q;
    }
    return Status::Ok();
  });
}

}  // namespace

Result<AlertsSection> LoadLabAlertRules() { return LoadLabAlerts(BatonHome() + "/alerts.yaml"); }

Status CheckAlertsAtSubmit(const std::string& config_path) {
  BATON_ASSIGN_OR_RETURN(const AlertsSection lab, LoadLabAlertRules());
  BATON_RETURN_IF_ERROR(CheckAlertReferences(lab, BatonHome() + "/alerts.yaml"));
  BATON_ASSIGN_OR_RETURN(const AlertsSection run_alerts, LoadRunAlerts(config_path));
  return CheckAlertReferences(run_alerts, config_path + ": alerts");
}

Result<AlertPassReport> AlertPass(Store& store, const AlertsSection& lab, double now) {
  BATON_ASSIGN_OR_RETURN(std::vector<RunRecord> runs, store.ListActiveRuns());
  BATON_ASSIGN_OR_RETURN(const std::vector<RunRecord> ended,
                         store.ListRunsEndedSince(now - kAlertFollowEndedS));
  runs.insert(runs.end(), ended.begin(), ended.end());
  BATON_ASSIGN_OR_RETURN(const std::vector<IncidentRecord> open_all, ListOpenIncidents(store));
  std::map<int64_t, std::vector<IncidentRecord>> open;
  for (const IncidentRecord& i : open_all) open[i.run_id].push_back(i);
  AlertPassReport report;
  for (const RunRecord& run : runs) {
    Result<AlertsSection> own = RunAlertsFromConfig(run.config, "run " + std::to_string(run.id));
    if (!own.ok()) {
      report.lines.push_back("run " + std::to_string(run.id) +
                             ": alerts skipped: " + own.status().message());
      continue;
    }
    RuleSets rules;
    rules.sets = {&lab, &*own};
    rules.stall_s = own->present ? own->stall_s : lab.stall_s;
    rules.public_url = lab.public_url;
    BATON_RETURN_IF_ERROR(PassOneRun(store, run, rules, open[run.id], now, &report));
  }
  return report;
}

Result<IncidentUpsert> RaiseIncident(Store& store, const IncidentRecord& seen,
                                     const AlertsSection& lab, double now) {
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(seen.run_id));
  BATON_ASSIGN_OR_RETURN(const AlertsSection own,
                         RunAlertsFromConfig(run.config, "run " + std::to_string(run.id)));
  RuleSets rules;
  rules.sets = {&lab, &own};
  rules.public_url = lab.public_url;
  IncidentUpsert out;
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(out, RecordIncidentInTx(store, seen, now));
    if (out.opened)
      BATON_RETURN_IF_ERROR(QueueOpened(store, out.incident, run, rules, now).status());
    return Status::Ok();
  }));
  return out;
}

double DeliveryBackoff(int64_t tries) {
  double s = 5;
  for (int64_t i = 1; i < tries && s < 300; ++i) s *= 2;
  return std::min(s, 300.0);
}

Result<int64_t> DeliverDue(Store& store, double now, int64_t max,
                           const std::function<void(const std::string&)>& log) {
  int64_t confirmed = 0;
  for (int64_t n = 0; n < max; ++n) {
    BATON_ASSIGN_OR_RETURN(const std::optional<DeliveryRecord> d,
                           ClaimDueDelivery(store, now, /*lease_s=*/30));
    if (!d) break;
    Result<AlertSink> sink = SinkFromJson(d->sink_json);
    Status st = sink.status();
    if (st.ok()) {
      try {
        st = SendAlert(*sink, nlohmann::json::parse(d->body));
      } catch (const nlohmann::json::exception& e) {
        st = Status::Data(std::string("unreadable message: ") + e.what());
      }
    }
    const double at = UnixTimeNow();
    if (st.ok()) {
      BATON_RETURN_IF_ERROR(MarkDeliverySent(store, d->id, at));
      ++confirmed;
      if (d->tries > 0 && log) {
        log("alert " + d->idempotency_key + " to sink '" + d->sink_name + "' delivered after " +
            std::to_string(d->tries + 1) + " tries");
      }
      continue;
    }
    BATON_RETURN_IF_ERROR(
        MarkDeliveryFailed(store, d->id, st.message(), at + DeliveryBackoff(d->tries + 1)));
    if (d->tries == 0 && log) {
      log("alert " + d->idempotency_key + " not delivered, will retry: " + st.message());
    }
  }
  return confirmed;
}

AlertDelivery::AlertDelivery(std::string db_path, double interval_s,
                             std::function<void(const std::string&)> log)
    : db_path_(std::move(db_path)), interval_s_(interval_s), log_(std::move(log)) {}

AlertDelivery::~AlertDelivery() { Stop(); }

void AlertDelivery::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void AlertDelivery::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void AlertDelivery::Loop() {
  Result<std::unique_ptr<Store>> store = Store::Open(db_path_);
  if (!store.ok()) {
    if (log_) log_("alert delivery stopped: " + store.status().ToString());
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    Result<int64_t> sent = DeliverDue(**store, UnixTimeNow(), 100, log_);
    if (!sent.ok() && log_) log_("alert delivery: " + sent.status().ToString());
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(static_cast<int64_t>(interval_s_ * 1000)),
                 [&] { return stop_; });
  }
}

}  // namespace baton
