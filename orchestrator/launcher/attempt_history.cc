#include "orchestrator/launcher/attempt_history.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "orchestrator/ingest/event_ingester.h"
#include "schema/events.h"

namespace baton {

std::vector<PastAttempt> ReadAttemptHistory(const std::string& run_dir) {
  std::vector<PastAttempt> out;
  for (const std::string& path : ListEventFiles(run_dir)) {
    PastAttempt a;
    a.events_path = path;
    const std::string name = path.substr(path.find_last_of('/') + 1);
    if (!ParseEventsFileName(name, &a.job_id, &a.restart_count)) continue;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a torn last line (no '\n'): not a record yet
      const nlohmann::json r = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!r.is_object() || !r.contains("type") || !r["type"].is_string()) continue;
      const std::string type = r["type"];
      auto num = [&](const char* key) -> std::optional<int64_t> {
        if (!r.contains(key) || !r[key].is_number()) return std::nullopt;
        return r[key].get<int64_t>();
      };
      if (type == event_type::kAttemptStart || type == event_type::kSegmentStart) {
        if (auto s0 = num("step0")) a.step0 = *s0;
      } else if (type == event_type::kStep || type == event_type::kSegmentEnd) {
        if (auto s = num("step"); s && (!a.last_step || *a.last_step < *s)) a.last_step = s;
      } else if (type == event_type::kAttemptEnd) {
        a.ended = true;
        a.action = r.value("action", "");
        a.reason = r.value("reason", "");
        a.exit_code = num("exit_code");
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace baton
