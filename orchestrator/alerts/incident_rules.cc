#include "orchestrator/alerts/incident_rules.h"

#include <cmath>
#include <fstream>

#include "orchestrator/history/duration_text.h"
#include "orchestrator/store/utf8_cut.h"

namespace baton {

namespace {

IncidentRecord Base(const RunView& v, const AttemptRecord* a, const std::string& kind,
                    std::string cause) {
  IncidentRecord i;
  i.run_id = v.run.id;
  i.kind = kind;
  i.cause = Clip(cause, kMaxCauseBytes, false);
  if (a != nullptr) {
    i.first_attempt_id = i.last_attempt_id = a->id;
    i.attempt_label = AttemptLabel(*a);
    i.step = a->last_step;
    i.node = a->nodes.substr(0, a->nodes.find(','));
  }
  return i;
}

// The kind an attempt's end reason is an incident of, or "" when it is none.
std::string EndKind(const std::string& end_reason) {
  if (end_reason == "no_progress" || end_reason == "diverged" || end_reason == "data_error") {
    return end_reason;
  }
  if (end_reason == "failure_budget" || end_reason == "restart_budget") return "budget_spent";
  return "";
}

std::string EndCause(const AttemptRecord& a) {
  std::string cause = "attempt " + AttemptLabel(a) + " ended: " + a.end_reason;
  if (!a.trainer_message.empty()) cause += ": " + a.trainer_message;
  if (a.exit_code) cause += " (exit " + std::to_string(*a.exit_code) + ")";
  return cause;
}

std::string HangCause(const AttemptRecord& a) {
  std::string cause = "hang in attempt " + AttemptLabel(a);
  if (a.hang_stale_ranks && !a.hang_stale_ranks->empty())
    cause += ": stale ranks " + *a.hang_stale_ranks;
  if (a.hang_last_heartbeat_at && a.hang_detected_at) {
    cause += ", no heartbeat for " + DurationText(*a.hang_detected_at - *a.hang_last_heartbeat_at);
  }
  return cause;
}

// The crash excerpt: the trainer's message, else the last lines of the attempt's log.
std::string CrashExcerpt(const AttemptRecord& a,
                         const std::function<std::string(const AttemptRecord&)>& log_tail) {
  std::string tail = log_tail ? log_tail(a) : "";
  if (tail.empty()) tail = a.trainer_message;
  return Clip(tail, kExcerptBytes, true);
}

void ObserveAttempt(const RunView& v, const AttemptRecord& a,
                    const std::function<std::string(const AttemptRecord&)>& log_tail,
                    std::vector<IncidentRecord>* out) {
  if (a.hang_detected_at) {
    IncidentRecord i = Base(v, &a, "hang", HangCause(a));
    if (a.hang_stale_ranks) i.rank = a.hang_stale_ranks->substr(0, a.hang_stale_ranks->find(':'));
    i.excerpt = Clip(a.hang_stack.value_or(""), kExcerptBytes, false);
    out->push_back(std::move(i));
  }
  const std::string kind = EndKind(a.end_reason);
  if (!kind.empty()) {
    IncidentRecord i = Base(v, &a, kind, EndCause(a));
    i.excerpt = CrashExcerpt(a, log_tail);
    out->push_back(std::move(i));
  }
  if (!a.hold_release_error.empty()) {
    out->push_back(Base(v, &a, "hold_release_refused",
                        "SLURM refused to release the requeue hold after attempt " +
                            AttemptLabel(a) + ": " + a.hold_release_error));
  }
}

const AttemptRecord* FindAttempt(const RunView& v, int64_t id) {
  for (const AttemptRecord& a : v.attempts) {
    if (a.id == id) return &a;
  }
  return nullptr;
}

}  // namespace

std::string AttemptLabel(const AttemptRecord& a) {
  return a.job_id + "." + std::to_string(a.restart_count) + "." + std::to_string(a.in_job_seq);
}

std::string Clip(const std::string& text, size_t bytes, bool keep_end) {
  return CutUtf8(text, bytes, keep_end ? CutKeep::kEnd : CutKeep::kStart);
}

std::vector<IncidentRecord> ObserveRun(
    const RunView& v, double now, double stall_s,
    const std::function<std::string(const AttemptRecord&)>& log_tail) {
  std::vector<IncidentRecord> out;
  for (const AttemptRecord& a : v.attempts) ObserveAttempt(v, a, log_tail, &out);
  if (v.grace_s) {
    for (const RunView::StopSave& s : v.stop_saves) {
      if (s.seconds <= *v.grace_s) continue;
      const AttemptRecord* a = FindAttempt(v, s.attempt_id);
      IncidentRecord i = Base(v, a, "stop_save_over_grace",
                              "the stop save at step " + std::to_string(s.step) + " took " +
                                  DurationText(s.seconds) + ", over the preemption grace of " +
                                  DurationText(*v.grace_s));
      i.step = s.step;
      out.push_back(std::move(i));
    }
  }
  const AttemptRecord* last = v.attempts.empty() ? nullptr : &v.attempts.back();
  if (v.run.status == RunStatus::kRunning && last != nullptr) {
    double since = last->started_at.value_or(v.run.updated_at);
    if (v.last_step_time && *v.last_step_time > since) since = *v.last_step_time;
    if (now - since > stall_s) {
      out.push_back(Base(v, last, "stalled",
                         "RUNNING with no new step for " + DurationText(now - since) +
                             " (alerts.stall_s " + DurationText(stall_s) + ")"));
    }
  }
  if (v.run.status == RunStatus::kFailed || v.run.status == RunStatus::kCompleted) {
    const bool failed = v.run.status == RunStatus::kFailed;
    IncidentRecord i = Base(v, last, failed ? "failed" : "completed",
                            failed ? "FAILED: " + v.run.reason : "COMPLETED");
    i.outcome = "final";
    if (failed && last != nullptr) {
      i.excerpt = last->hang_stack ? Clip(*last->hang_stack, kExcerptBytes, false)
                                   : CrashExcerpt(*last, log_tail);
    }
    out.push_back(std::move(i));
  }
  return out;
}

std::optional<std::string> IncidentOutcome(const IncidentRecord& i, const RunView& v) {
  if (i.outcome != "open") return std::nullopt;
  if (v.run.status == RunStatus::kFailed) return std::string("failed");
  if (v.run.status == RunStatus::kCompleted) return std::string("recovered");
  if (v.run.status == RunStatus::kCancelled) return std::string("closed");
  if (i.kind == "stalled") {
    if (v.last_step_time && *v.last_step_time > i.opened_at) return std::string("recovered");
    return std::nullopt;
  }
  for (const AttemptRecord& a : v.attempts) {
    if (a.id <= i.last_attempt_id || !a.last_step) continue;
    if (*a.last_step > a.step0.value_or(0)) return std::string("recovered");
  }
  return std::nullopt;
}

std::string LogTail(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > static_cast<std::streamoff>(kExcerptBytes)
                                  ? size - static_cast<std::streamoff>(kExcerptBytes)
                                  : 0;
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (from > 0) {
    const size_t nl = text.find('\n');  // whole lines only
    if (nl != std::string::npos) text.erase(0, nl + 1);
  }
  return text;
}

}  // namespace baton
