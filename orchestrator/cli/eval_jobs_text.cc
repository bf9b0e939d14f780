#include "orchestrator/cli/eval_jobs_text.h"

#include <iostream>
#include <map>

#include "orchestrator/cli/history_text.h"

namespace baton {

void PrintEvalJobs(const std::vector<EvalJobRecord>& jobs) {
  if (jobs.empty()) return;
  std::map<std::string, int64_t> count;
  // The newest attempt of each checkpoint tells where its eval stands.
  std::map<int64_t, const EvalJobRecord*> last;
  for (const EvalJobRecord& j : jobs) {
    if (last.count(j.step) == 0 || j.attempt > last[j.step]->attempt) last[j.step] = &j;
  }
  for (const auto& [step, j] : last) {
    ++count[j->live() ? std::string("live") : j->state];
  }
  std::cout << "  eval jobs " << count["done"] << " evaluated, " << count["live"] << " live, "
            << count[kEvalJobFailed] << " failed, " << count[kEvalJobUnverified]
            << " not verified\n";
  for (const auto& [step, j] : last) {
    if (j->state == kEvalJobFailed) {
      std::cout << "           step " << step << ": failed " << j->attempt << " time"
                << (j->attempt == 1 ? "" : "s") << (j->reported ? " (reported)" : "") << ": "
                << PrintableText(j->reason) << "\n";
    } else if (j->state == kEvalJobUnverified) {
      std::cout << "           step " << step << ": not evaluated, " << PrintableText(j->reason)
                << "\n";
    }
  }
}

nlohmann::json EvalJobsJson(const std::vector<EvalJobRecord>& jobs) {
  nlohmann::json out = nlohmann::json::array();
  for (const EvalJobRecord& j : jobs) {
    out.push_back({{"step", j.step},
                   {"attempt", j.attempt},
                   {"job_id", j.job_id},
                   {"state", j.state},
                   {"reason", j.reason},
                   {"reported", j.reported},
                   {"submitted_at", j.submitted_at},
                   {"updated_at", j.updated_at},
                   {"ended_at", j.ended_at ? nlohmann::json(*j.ended_at) : nlohmann::json()}});
  }
  return out;
}

}  // namespace baton
