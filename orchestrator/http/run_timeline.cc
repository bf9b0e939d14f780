#include "orchestrator/http/run_timeline.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "schema/run_config.h"

namespace baton {

namespace {

// A scalar under optim.<key>, or `fallback` when absent or not a number.
template <class T>
T OptimValue(const YAML::Node& optim, const char* key, T fallback) {
  if (!optim || !optim.IsMap() || !optim[key] || !optim[key].IsScalar()) return fallback;
  try {
    return optim[key].as<T>();
  } catch (const YAML::Exception&) {
    return fallback;
  }
}

}  // namespace

double ExpectedSchedule::At(int64_t step) const {
  if (warmup_steps > 0 && step < warmup_steps) {
    return base_lr * static_cast<double>(step) / static_cast<double>(warmup_steps);
  }
  return base_lr;
}

ExpectedSchedule ScheduleFromConfig(const std::string& yaml_text) {
  ExpectedSchedule s;
  const OptimSection defaults;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception&) {
    return s;  // unknown schedule: the UI draws no overlay rather than a wrong one
  }
  if (!root || !root.IsMap()) return s;
  const YAML::Node optim = root["optim"];
  s.base_lr = OptimValue<double>(optim, "lr", defaults.lr);
  s.warmup_steps = OptimValue<int64_t>(optim, "warmup_steps", defaults.warmup_steps);
  s.resume_warmup_steps =
      OptimValue<int64_t>(optim, "resume_warmup_steps", defaults.resume_warmup_steps);
  s.known = true;
  return s;
}

std::vector<TimelineSegment> BuildTimeline(const std::vector<AttemptRecord>& attempts,
                                           const std::vector<AttemptStepStats>& stats,
                                           const ExpectedSchedule& schedule) {
  std::vector<TimelineSegment> out;
  for (size_t i = 0; i < attempts.size(); ++i) {
    TimelineSegment seg;
    seg.index = static_cast<int>(i + 1);
    seg.attempt = attempts[i];
    seg.stats.attempt_id = attempts[i].id;
    for (const AttemptStepStats& st : stats) {
      if (st.attempt_id == attempts[i].id) seg.stats = st;
    }
    const AttemptRecord& a = seg.attempt;
    seg.step0 = a.step0.value_or(seg.stats.first_step.value_or(0));
    const std::string mode = a.resume_mode.empty() ? "fresh" : a.resume_mode;

    // The warmup the attempt ran: what its segment_start said, else what the config implies.
    int64_t until = seg.step0;
    if (a.warmup_until) {
      until = *a.warmup_until;
    } else if (schedule.known) {
      until = std::max(seg.step0, schedule.warmup_steps);
      if (mode == "weights_only") {
        const int64_t k =
            a.resume_warmup_steps > 0 ? a.resume_warmup_steps : schedule.resume_warmup_steps;
        until = std::max(until, seg.step0 + k);
      }
    }
    const std::optional<int64_t> reached = a.last_step ? a.last_step : seg.stats.last_step;
    if (reached) until = std::min(until, *reached + 1);
    if (until > seg.step0) {
      seg.warmup_from = seg.step0;
      seg.warmup_until = until;
      seg.warmup_kind = mode == "weights_only" ? "resume_warmup" : "warmup";
    }

    if (i == 0) {
      seg.label = "#1 " + mode + " @ " + std::to_string(seg.step0);
    } else {
      const std::string& prev = attempts[i - 1].end_reason;
      seg.label = "#" + std::to_string(i + 1) + " " + (prev.empty() ? "interrupted" : prev) +
                  " → resumed " + mode + " @ " + std::to_string(seg.step0);
    }
    if (a.started_at) {
      const std::optional<double> end = a.ended_at ? a.ended_at : seg.stats.last_time;
      if (end) seg.duration_s = std::max(0.0, *end - *a.started_at);
    }
    out.push_back(std::move(seg));
  }
  return out;
}

RunAudit BuildAudit(const std::vector<TimelineSegment>& segments,
                    const ExpectedSchedule& schedule) {
  RunAudit audit;
  audit.attempts = static_cast<int64_t>(segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    const AttemptStepStats& st = segments[i].stats;
    audit.effective_steps += st.effective_steps;
    audit.warmup_steps += st.warmup_steps;
    audit.nonfinite_steps += st.nonfinite_steps;
    audit.steps_redone += st.superseded_steps;
    audit.redone_compute_s += st.superseded_step_time_s;
    if (i > 0) {
      const AttemptRecord& prev = segments[i - 1].attempt;
      const AttemptRecord& cur = segments[i].attempt;
      // The end of the previous attempt: its attempt_end, else its last step.
      std::optional<double> end = prev.ended_at ? prev.ended_at : segments[i - 1].stats.last_time;
      if (end && cur.started_at) audit.requeue_hold_s += std::max(0.0, *cur.started_at - *end);
    }
  }
  if (audit.effective_steps > 0) {
    audit.warmup_fraction =
        static_cast<double>(audit.warmup_steps) / static_cast<double>(audit.effective_steps);
  }
  if (schedule.known) {
    audit.expected_warmup_steps = std::min(schedule.warmup_steps, audit.effective_steps);
  }
  return audit;
}

}  // namespace baton
