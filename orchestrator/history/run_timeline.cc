#include "orchestrator/history/run_timeline.h"

#include <algorithm>

#include "schema/resume_decision.h"
#include "schema/run_config.h"
#include "schema/step_numbers.h"

namespace baton {

ExpectedSchedule ScheduleFromConfig(const std::string& yaml_text) {
  ExpectedSchedule s;
  RunConfigOptions options;
  options.check_filesystem = false;
  Result<RunConfig> config = ParseRunConfig(yaml_text, "run.yaml", options);
  if (!config.ok()) return s;  // unknown schedule: the UI draws no overlay rather than a wrong one
  const LrSchedule uninterrupted = LrSchedule::Uninterrupted(*config);
  s.base_lr = uninterrupted.base_lr;
  s.warmup_steps = uninterrupted.warmup_steps;
  s.resume_warmup_steps = config->optim.resume_warmup_steps;
  s.known = true;
  return s;
}

WarmupRange AttemptWarmup(const AttemptRecord& a, const ExpectedSchedule& schedule,
                          std::optional<int64_t> reached_index) {
  const int64_t step0 = a.step0.value_or(0);
  const int64_t last = reached_index ? *reached_index : -1;
  if (schedule.known) {
    const int64_t k =
        IsOneOf(a.resume_mode, {ResumeMode::kWeightsOnly}) ? a.resume_warmup_steps : 0;
    return SegmentWarmup(schedule.Segment(step0, k), last);
  }
  if (!a.warmup_until) return WarmupRange{step0, step0};
  // Config unknown: the trainer's own figure from segment_start (the same function).
  LrSchedule reported{0, *a.warmup_until, step0, 0};
  return SegmentWarmup(reported, last);
}

std::vector<TimelineSegment> BuildTimeline(const std::vector<AttemptRecord>& attempts,
                                           const std::vector<AttemptStepStats>& stats,
                                           const ExpectedSchedule& schedule) {
  std::vector<TimelineSegment> out;
  for (size_t i = 0; i < attempts.size(); ++i) {
    TimelineSegment seg;
    seg.index = static_cast<int>(AttemptNumber(static_cast<int64_t>(i)));
    seg.attempt = attempts[i];
    seg.stats.attempt_id = attempts[i].id;
    for (const AttemptStepStats& st : stats) {
      if (st.attempt_id == attempts[i].id) seg.stats = st;
    }
    const AttemptRecord& a = seg.attempt;
    seg.step0 = a.step0.value_or(seg.stats.first_step.value_or(0));
    const std::string mode = a.resume_mode.empty() ? Name(ResumeMode::kFresh) : a.resume_mode;

    const WarmupRange w =
        AttemptWarmup(a, schedule, a.last_step ? *a.last_step - 1 : seg.stats.last_step);
    if (!w.empty()) {
      seg.warmup_from = w.from;
      seg.warmup_until = w.until;
      seg.warmup_kind = IsOneOf(mode, {ResumeMode::kWeightsOnly}) ? "resume_warmup" : "warmup";
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
