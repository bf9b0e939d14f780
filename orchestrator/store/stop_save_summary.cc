#include "orchestrator/store/stop_save_summary.h"

#include <cmath>
#include <cstdio>

#include "schema/event_records.h"

namespace baton {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

Result<StopSaveSummary> ReadStopSaveSummary(Store& store, int64_t run_id) {
  StopSaveSummary s;
  BATON_ASSIGN_OR_RETURN(s.budget, store.GetStopSaveBudget(run_id));
  BATON_ASSIGN_OR_RETURN(std::vector<CheckpointRecord> all, store.ListCheckpoints(run_id));
  for (CheckpointRecord& c : all) {
    if (IsOneOf(c.reason, {SaveReason::kSignal})) s.measured.push_back(std::move(c));
  }
  return s;
}

nlohmann::json StopSaveJson(const StopSaveSummary& s) {
  nlohmann::json j = nlohmann::json::object();
  if (s.budget) {
    const StopSaveBudgetRecord& b = *s.budget;
    j["predicted_s"] = b.predicted_s;
    j["grace_s"] = b.grace_s;
    j["grace_source"] = b.grace_source;
    j["bytes_per_rank"] = b.bytes_per_rank;
    j["write_gbps"] = b.write_gbps;
    j["write_source"] = b.write_source;
    j["fits"] = b.fits;
  } else {
    for (const char* k : {"predicted_s", "grace_s", "grace_source", "bytes_per_rank", "write_gbps",
                          "write_source", "fits"}) {
      j[k] = nullptr;
    }
  }
  nlohmann::json measured = nlohmann::json::array();
  for (const CheckpointRecord& c : s.measured) {
    measured.push_back(
        {{"step", c.step},
         {"seconds", std::isnan(c.seconds) ? nlohmann::json() : nlohmann::json(c.seconds)},
         {"bytes", c.bytes}});
  }
  j["measured"] = measured;
  return j;
}

std::string StopSaveLine(const StopSaveSummary& s) {
  std::string line;
  if (s.budget) {
    const StopSaveBudgetRecord& b = *s.budget;
    line = "predicted " + Fixed(b.predicted_s, 1) + " s for " +
           Fixed(double(b.bytes_per_rank) / 1e9, 2) + " GB per rank at " + Fixed(b.write_gbps, 2) +
           " GB/s (" + b.write_source + "), grace " + Fixed(b.grace_s, 0) + " s (" +
           b.grace_source + "): " + (b.fits ? "fits" : "DOES NOT FIT with the margin");
  }
  if (!s.measured.empty()) {
    if (!line.empty()) line += "; ";
    line += "measured";
    size_t shown = 0;
    for (const CheckpointRecord& c : s.measured) {
      if (shown++ == 3) {
        line += ", ...";
        break;
      }
      line += (shown == 1 ? " " : ", ") +
              (std::isnan(c.seconds) ? std::string("?") : Fixed(c.seconds, 2)) + " s at step " +
              std::to_string(c.step);
    }
  }
  return line;
}

}  // namespace baton
