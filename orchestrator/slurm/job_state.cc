#include "orchestrator/slurm/job_state.h"

namespace baton {

JobState ParseJobState(std::string_view text) {
  return Find<JobState>(text.substr(0, text.find(' '))).value_or(JobState::kOther);
}

bool IsAnyOf(JobState state, std::initializer_list<JobState> states) {
  for (const JobState s : states) {
    if (state == s) return true;
  }
  return false;
}

bool AwaitsStart(JobState state) {
  using S = JobState;
  return IsAnyOf(state, {S::kPending, S::kRequeued, S::kRequeueHold, S::kRequeueFed});
}

bool RequeuedBySlurm(JobState state) {
  using S = JobState;
  return IsAnyOf(state, {S::kPending, S::kRequeued, S::kRequeueHold, S::kPreempted});
}

bool IsStartUnderWay(JobState state) {
  using S = JobState;
  return IsAnyOf(state, {S::kRunning, S::kConfiguring, S::kResizing, S::kSignaling, S::kStageOut});
}

bool IsStartOver(JobState state) {
  using S = JobState;
  return IsAnyOf(state, {S::kCompleted, S::kCancelled, S::kTimeout, S::kPreempted, S::kNodeFail}) ||
         IsFailedEnd(state);
}

bool IsFailedEnd(JobState state) {
  using S = JobState;
  return IsAnyOf(state, {S::kFailed, S::kOutOfMemory, S::kBootFail, S::kDeadline});
}

}  // namespace baton
