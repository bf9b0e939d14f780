// Sends one alert message to one sink: a webhook (the message's JSON by POST), Slack (its
// incoming-webhook JSON) or email (a pipe into `sendmail -t -oi`). Every HTTP delivery carries
// the `Baton-Incident: <key>` header; a 2xx answer confirms it. Bounded: the sink's timeout_s
// (5 s by default) for connecting, each read and write, and the whole exchange; at most 64 KiB of
// the answer is read. The URL is resolved from its reference here, at delivery, and never
// appears in an error (errors name the sink and the host's answer only).
//
// Called by the delivery loop of watch and serve and by `baton alerts test`; never on a
// compute node. Thread-safe (no shared state).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "schema/alerts_config.h"
#include "schema/status.h"

namespace baton {

// The most of a receiver's answer that is read.
inline constexpr size_t kMaxAnswerBytes = 64 * 1024;

// Ok once the sink confirmed the message; kUnavailable (with the reason) to be tried again;
// kConfig when the sink's reference does not resolve.
[[nodiscard]] Status SendAlert(const AlertSink& sink, const nlohmann::json& message);

// The sink's definition as JSON (what the outbox keeps: references only) and back.
nlohmann::json SinkJson(const AlertSink& sink);
[[nodiscard]] Result<AlertSink> SinkFromJson(const std::string& text);

}  // namespace baton
