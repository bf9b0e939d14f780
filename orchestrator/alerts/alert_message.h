// Alert messages: one JSON shape for every sink (what a webhook receives as it is), and its
// renderings for Slack's incoming webhooks and for an email through sendmail. A message carries
// the incident's idempotency key ("<incident>.<seq>", also the Baton-Incident header), the run's
// name, id and owner, the cause, the attempt as J.R.S, the step, node and rank where known, an
// excerpt of at most 2 KiB and a link to the run page.
//
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "orchestrator/store/records.h"
#include "orchestrator/store/store_alerts.h"
#include "schema/alerts_config.h"

namespace baton {

// The message about `i` (seq 1: the incident; seq 2: its follow-up, whose outcome it says).
// `public_url` ('' = none) is the base of the run page link.
nlohmann::json AlertMessage(const IncidentRecord& i, const RunRecord& run, int64_t seq,
                            const std::string& public_url);
// The message `baton alerts test` sends.
nlohmann::json TestMessage(const std::string& sink_name, double now);

// One line: "[baton] hang in run 'demo' (12): <cause>" (subject of an email, Slack's first line).
std::string AlertSubject(const nlohmann::json& m);
// The message as plain text lines (email body, Slack text).
std::string AlertText(const nlohmann::json& m);
// The Slack incoming-webhook body: {"text": ...}.
std::string SlackBody(const nlohmann::json& m);
// The whole mail for `sendmail -t -oi`: headers (To, Subject, Baton-Incident) and the text.
std::string EmailMessage(const nlohmann::json& m, const std::string& to);

}  // namespace baton
