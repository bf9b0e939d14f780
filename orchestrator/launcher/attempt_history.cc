#include "orchestrator/launcher/attempt_history.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "schema/events.h"
#include "schema/run_folder.h"

namespace baton {

std::vector<PastAttempt> ReadAttemptHistory(const std::string& run_dir) {
  std::vector<PastAttempt> out;
  for (const std::string& path : RunFolder{run_dir}.ListEventFiles()) {
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
      auto raise = [&](std::optional<int64_t> done) {
        if (done && (!a.last_step || *a.last_step < *done)) a.last_step = done;
      };
      if (type == event_type::kAttemptStart) {
        if (auto s0 = AttemptStartEvent::FromJson(r).step0) a.step0 = *s0;
      } else if (type == event_type::kSegmentStart) {
        if (auto s0 = SegmentStartEvent::FromJson(r).step0) a.step0 = *s0;
      } else if (type == event_type::kStep) {
        // Steps finished, like step0: step k done means k + 1 are.
        const StepEvent e = StepEvent::FromJson(r);
        if (e.step) raise(*e.step + 1);
      } else if (type == event_type::kSegmentEnd) {
        raise(SegmentEndEvent::FromJson(r).step);
      } else if (type == event_type::kAttemptEnd) {
        const AttemptEndEvent e = AttemptEndEvent::FromJson(r);
        a.ended = true;
        a.action = e.action;
        a.reason = e.reason;
        a.exit_code = e.exit_code;
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace baton
