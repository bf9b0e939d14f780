#include "orchestrator/reconcile/eval_job_plan.h"

#include <algorithm>
#include <map>

#include "orchestrator/slurm/job_state.h"

namespace baton {

namespace {

// SLURM states of a job that may still run: it is waiting (a requeue or a preemption puts it
// back in the queue) or running.
bool WaitingState(JobState s) {
  using S = JobState;
  return AwaitsStart(s) ||
         IsAnyOf(s, {S::kPreempted, S::kSuspended, S::kConfiguring, S::kResvDelHold});
}

bool RunningState(JobState s) {
  using S = JobState;
  return IsAnyOf(s, {S::kRunning, S::kCompleting, S::kSignaling, S::kStageOut, S::kResizing});
}

}  // namespace

std::vector<EvalJobAction> PlanEvalJobs(const std::vector<int64_t>& targets,
                                        const std::set<int64_t>& evaluated,
                                        const std::vector<EvalJobRecord>& jobs) {
  std::map<int64_t, std::vector<const EvalJobRecord*>> by_step;
  for (const EvalJobRecord& j : jobs) by_step[j.step].push_back(&j);
  std::set<int64_t> steps(targets.begin(), targets.end());
  // A failed retry is reported even when retention has since removed its checkpoint.
  for (const auto& [step, rows] : by_step) steps.insert(step);
  const std::set<int64_t> is_target(targets.begin(), targets.end());

  std::vector<EvalJobAction> out;
  for (const int64_t step : steps) {
    if (evaluated.count(step) > 0) continue;
    const std::vector<const EvalJobRecord*>& rows = by_step[step];
    const EvalJobRecord* last = nullptr;
    bool settled = false;  // live, done or unverified: nothing to do
    for (const EvalJobRecord* r : rows) {
      if (r->live() || r->state == kEvalJobDone || r->state == kEvalJobUnverified) settled = true;
      if (last == nullptr || r->attempt > last->attempt) last = r;
    }
    if (settled) continue;
    if (last == nullptr) {
      if (is_target.count(step) > 0) out.push_back({EvalJobAction::Kind::kSubmit, step, 1, 0, ""});
      continue;
    }
    if (last->attempt < kEvalJobMaxAttempts) {
      if (is_target.count(step) > 0) {
        out.push_back({EvalJobAction::Kind::kSubmit, step, last->attempt + 1, 0, ""});
      }
      continue;
    }
    if (!last->reported) {
      out.push_back({EvalJobAction::Kind::kReport, step, last->attempt, last->id, last->reason});
    }
  }
  return out;
}

EvalJobRecord NextEvalJobState(const EvalJobRecord& row, const std::optional<JobInfo>& job,
                               bool evaluated, const std::string& log_line, double now) {
  EvalJobRecord next = row;
  if (!row.live()) return next;
  next.updated_at = now;
  if (evaluated) {
    next.state = kEvalJobDone;
    next.reason.clear();
    return next;
  }
  const std::string where = log_line.empty() ? "" : "; log: " + log_line;
  if (!job) {
    next.state = kEvalJobFailed;
    next.reason = "SLURM no longer knows job " + row.job_id + " and it wrote no result" + where;
    return next;
  }
  if (WaitingState(ParseJobState(job->state))) {
    next.state = kEvalJobPending;
    return next;
  }
  if (RunningState(ParseJobState(job->state))) {
    next.state = kEvalJobRunning;
    return next;
  }
  next.state = kEvalJobFailed;
  next.reason = "job " + row.job_id + " ended " +
                (job->state.empty() ? Name(JobState::kUnknown) : job->state) + " (exit " +
                (job->exit_code.empty() ? "?" : job->exit_code) + ") without writing its result" +
                where;
  return next;
}

}  // namespace baton
