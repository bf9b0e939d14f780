#include "orchestrator/reconcile/slurm_state_kind.h"

#include "orchestrator/slurm/job_state.h"

namespace baton {

bool IsFinalSlurmState(const std::string& state) {
  const JobState s = ParseJobState(state);
  return IsStartOver(s) || s == JobState::kRequeued || s == JobState::kUnknown;
}

bool AttemptEnded(const AttemptRecord& a) {
  return !a.action.empty() || !a.end_reason.empty() || a.ended_at.has_value();
}

std::optional<SlurmStateKind> ClassifySlurmState(const AttemptRecord& a) {
  if (a.slurm_state.empty()) return std::nullopt;
  if (IsFinalSlurmState(a.slurm_state)) return SlurmStateKind::kFinal;
  return AttemptEnded(a) ? SlurmStateKind::kLastSeen : SlurmStateKind::kCurrent;
}

}  // namespace baton
