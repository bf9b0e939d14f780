#include "orchestrator/alerts/alert_message.h"

#include <sstream>

#include "orchestrator/store/store_alerts.h"

namespace baton {

namespace {

// Header values never take a line break from a run's name or a cause (no header injection).
std::string OneLine(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '\n' || c == '\r') ? ' ' : c;
  return out;
}

std::string RunLink(const std::string& public_url, int64_t run_id) {
  if (public_url.empty()) return "";
  std::string base = public_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/#/runs/" + std::to_string(run_id);
}

}  // namespace

nlohmann::json AlertMessage(const IncidentRecord& i, const RunRecord& run, int64_t seq,
                            const std::string& public_url) {
  nlohmann::json m{{"idempotency_key", IdempotencyKey(i.id, seq)},
                   {"incident_id", i.id},
                   {"message", seq == 1 ? "incident" : "follow_up"},
                   {"kind", i.kind},
                   {"outcome", i.outcome},
                   {"run",
                    {{"id", run.id},
                     {"name", run.name},
                     {"owner", run.owner},
                     {"cluster", run.cluster},
                     {"partition", run.partition},
                     {"status", Name(run.status)}}},
                   {"cause", i.cause},
                   {"attempt", i.attempt_label},
                   {"step", i.step ? nlohmann::json(*i.step) : nlohmann::json(nullptr)},
                   {"node", i.node},
                   {"rank", i.rank},
                   {"occurrences", i.occurrences},
                   {"excerpt", i.excerpt},
                   {"url", RunLink(public_url, run.id)},
                   {"opened_at", i.opened_at}};
  return m;
}

nlohmann::json TestMessage(const std::string& sink_name, double now) {
  return nlohmann::json{{"idempotency_key", "test." + std::to_string(static_cast<int64_t>(now))},
                        {"incident_id", 0},
                        {"message", "test"},
                        {"kind", "test"},
                        {"outcome", "final"},
                        {"run", {{"id", 0}, {"name", ""}, {"owner", ""}}},
                        {"cause", "a test message to sink '" + sink_name + "' (baton alerts test)"},
                        {"attempt", ""},
                        {"step", nullptr},
                        {"node", ""},
                        {"rank", ""},
                        {"occurrences", 0},
                        {"excerpt", ""},
                        {"url", ""},
                        {"opened_at", now}};
}

std::string AlertSubject(const nlohmann::json& m) {
  const std::string kind = m.value("kind", "");
  const nlohmann::json& run = m["run"];
  std::string s = "[baton] ";
  if (m.value("message", "") == "follow_up") {
    s += kind + " " + m.value("outcome", "") + ": ";
  } else {
    s += kind + ": ";
  }
  s += "run '" + run.value("name", "") + "' (" + std::to_string(run.value("id", int64_t{0})) +
       ") " + m.value("cause", "");
  return OneLine(s).substr(0, 300);
}

std::string AlertText(const nlohmann::json& m) {
  std::ostringstream t;
  const nlohmann::json& run = m["run"];
  t << AlertSubject(m) << "\n";
  t << "run: " << run.value("name", "") << " (id " << run.value("id", int64_t{0}) << ", owner "
    << run.value("owner", "") << ")\n";
  if (!m.value("attempt", "").empty()) t << "attempt: " << m.value("attempt", "") << "\n";
  if (m["step"].is_number()) t << "step: " << m["step"].get<int64_t>() << "\n";
  if (!m.value("node", "").empty()) t << "node: " << m.value("node", "") << "\n";
  if (!m.value("rank", "").empty()) t << "rank: " << m.value("rank", "") << "\n";
  if (!m.value("url", "").empty()) t << "run page: " << m.value("url", "") << "\n";
  t << "incident: " << m.value("idempotency_key", "") << "\n";
  if (!m.value("excerpt", "").empty()) t << "\n" << m.value("excerpt", "") << "\n";
  return t.str();
}

std::string SlackBody(const nlohmann::json& m) {
  return nlohmann::json{{"text", AlertText(m)}, {"baton_incident", m.value("idempotency_key", "")}}
      .dump();
}

std::string EmailMessage(const nlohmann::json& m, const std::string& to) {
  std::ostringstream t;
  t << "To: " << OneLine(to) << "\n";
  t << "Subject: " << AlertSubject(m) << "\n";
  t << "Baton-Incident: " << OneLine(m.value("idempotency_key", "")) << "\n";
  t << "Content-Type: text/plain; charset=utf-8\n\n";
  t << AlertText(m);
  return t.str();
}

}  // namespace baton
