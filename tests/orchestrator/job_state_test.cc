// SLURM's job state words as JobState (slurm/job_state.h): every word parses back, a suffixed or
// unknown word, and which states each group holds, state by state, so moving a state between
// groups fails here before it changes what reconcile, the launcher or resume do.
#include "orchestrator/slurm/job_state.h"

#include <gtest/gtest.h>

#include <set>

#include "orchestrator/reconcile/slurm_state_kind.h"
#include "tests/unit/vocabulary_checks.h"

namespace baton {
namespace {

using S = JobState;

std::set<S> StatesWhere(bool (*in_group)(JobState)) {
  std::set<S> out;
  for (const Word<S>& w : Vocabulary<S>::kWords) {
    if (in_group(w.value)) out.insert(w.value);
  }
  if (in_group(S::kOther)) out.insert(S::kOther);
  return out;
}

TEST(JobState, EveryWordParsesBack) {
  test::ExpectEveryWordParsesBack<S>("JobState");
  for (const Word<S>& w : Vocabulary<S>::kWords) EXPECT_EQ(ParseJobState(w.name), w.value);
}

TEST(JobState, ReadsTheFirstWordAndNothingElse) {
  EXPECT_EQ(ParseJobState("CANCELLED by 0"), S::kCancelled);
  EXPECT_EQ(ParseJobState("RUNNING"), S::kRunning);
  EXPECT_EQ(ParseJobState(""), S::kOther);
  EXPECT_EQ(ParseJobState(" RUNNING"), S::kOther);
  EXPECT_EQ(ParseJobState("running"), S::kOther);
  EXPECT_EQ(ParseJobState("RUNNINGX"), S::kOther);
  EXPECT_EQ(ParseJobState("SPECIAL_EXIT"), S::kOther);
  EXPECT_STREQ(Name(S::kOther), "?");
}

TEST(JobState, GroupsHoldExactlyTheirStates) {
  EXPECT_EQ(StatesWhere(AwaitsStart),
            (std::set<S>{S::kPending, S::kRequeued, S::kRequeueHold, S::kRequeueFed}));
  EXPECT_EQ(StatesWhere(RequeuedBySlurm),
            (std::set<S>{S::kPending, S::kRequeued, S::kRequeueHold, S::kPreempted}));
  EXPECT_EQ(StatesWhere(IsStartUnderWay),
            (std::set<S>{S::kRunning, S::kConfiguring, S::kResizing, S::kSignaling, S::kStageOut}));
  EXPECT_EQ(StatesWhere(IsFailedEnd),
            (std::set<S>{S::kFailed, S::kOutOfMemory, S::kBootFail, S::kDeadline}));
  EXPECT_EQ(StatesWhere(IsStartOver),
            (std::set<S>{S::kCompleted, S::kFailed, S::kCancelled, S::kTimeout, S::kPreempted,
                         S::kNodeFail, S::kOutOfMemory, S::kBootFail, S::kDeadline}));
}

TEST(JobState, NoGroupHoldsAnUnknownWordOrCompleting) {
  for (const S s : {S::kOther, S::kUnknown, S::kCompleting}) {
    EXPECT_FALSE(AwaitsStart(s) || RequeuedBySlurm(s) || IsStartUnderWay(s) || IsStartOver(s) ||
                 IsFailedEnd(s))
        << Name(s);
  }
}

TEST(JobState, FinalRecordedStatesAreSlurmsEndsAndReconcilesVerdicts) {
  for (const char* final_state :
       {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY",
        "BOOT_FAIL", "DEADLINE", "REQUEUED", "UNKNOWN"}) {
    EXPECT_TRUE(IsFinalSlurmState(final_state)) << final_state;
  }
  for (const char* live : {"", "PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED",
                           "REQUEUE_HOLD", "SPECIAL_EXIT"}) {
    EXPECT_FALSE(IsFinalSlurmState(live)) << live;
  }
}

}  // namespace
}  // namespace baton
