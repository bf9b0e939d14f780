// JobState: SLURM's job state word (scontrol's JobState=) as an enum, and the groups of states
// the orchestrator acts on, so the state words are spelled once (Vocabulary<JobState>) and every
// caller compares enums.
//
// JobInfo keeps the word SLURM printed (slurm_client.h): it is what an attempt records and what
// the CLI and the API print. ParseJobState reads it here; a word this build does not know is
// kOther, which no group holds, so such a state is never acted on. Which group a caller asks
// about is its own rule (a run's sync pass, an eval job's, the launcher's requeue, resume);
// the groups are defined here. Pure functions; thread-safe.
#pragma once

#include <initializer_list>
#include <string_view>

#include "schema/vocabularies.h"

namespace baton {

enum class JobState {
  kOther,  // a word this build does not know, or none
  kPending,
  kRequeued,
  kRequeueHold,
  kRequeueFed,
  kResvDelHold,
  kSuspended,
  kConfiguring,
  kRunning,
  kResizing,
  kSignaling,
  kStageOut,
  kCompleting,
  kCompleted,
  kFailed,
  kCancelled,
  kTimeout,
  kPreempted,
  kNodeFail,
  kOutOfMemory,
  kBootFail,
  kDeadline,
  kUnknown,  // not SLURM's: the state reconcile records for a start whose job SLURM forgot
};

template <>
struct Vocabulary<JobState> {
  static constexpr Word<JobState> kWords[] = {
      {JobState::kPending, "PENDING"},           {JobState::kRequeued, "REQUEUED"},
      {JobState::kRequeueHold, "REQUEUE_HOLD"},  {JobState::kRequeueFed, "REQUEUE_FED"},
      {JobState::kResvDelHold, "RESV_DEL_HOLD"}, {JobState::kSuspended, "SUSPENDED"},
      {JobState::kConfiguring, "CONFIGURING"},   {JobState::kRunning, "RUNNING"},
      {JobState::kResizing, "RESIZING"},         {JobState::kSignaling, "SIGNALING"},
      {JobState::kStageOut, "STAGE_OUT"},        {JobState::kCompleting, "COMPLETING"},
      {JobState::kCompleted, "COMPLETED"},       {JobState::kFailed, "FAILED"},
      {JobState::kCancelled, "CANCELLED"},       {JobState::kTimeout, "TIMEOUT"},
      {JobState::kPreempted, "PREEMPTED"},       {JobState::kNodeFail, "NODE_FAIL"},
      {JobState::kOutOfMemory, "OUT_OF_MEMORY"}, {JobState::kBootFail, "BOOT_FAIL"},
      {JobState::kDeadline, "DEADLINE"},         {JobState::kUnknown, "UNKNOWN"}};
};

// The state of SLURM's state text: its first word ("CANCELLED by 0", as squeue prints a
// cancellation, is kCancelled); kOther for an empty text or a word not in the table.
JobState ParseJobState(std::string_view text);

bool IsAnyOf(JobState state, std::initializer_list<JobState> states);

// The job waits in the queue for its next start: PENDING, REQUEUED, REQUEUE_HOLD, REQUEUE_FED.
bool AwaitsStart(JobState state);

// A start is under way and its processes may run: RUNNING, CONFIGURING (nodes booting for it),
// RESIZING, SIGNALING, STAGE_OUT. COMPLETING, the start's end, is apart.
bool IsStartUnderWay(JobState state);

// SLURM's word that a start is over: COMPLETED, FAILED, CANCELLED, TIMEOUT, PREEMPTED,
// NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE.
bool IsStartOver(JobState state);

// Seen from inside the allocation after the trainer exited: SLURM requeued the job itself
// (PreemptMode=REQUEUE), so the launcher must not requeue it again (a second requeue fails or,
// worse, counts twice): PENDING, REQUEUED, REQUEUE_HOLD, PREEMPTED. REQUEUE_FED is apart: it is
// SLURM's own hand-over of a federated job, not a requeue of this one.
bool RequeuedBySlurm(JobState state);

// An end that is the run's failure, not its preemption, time limit or cancellation: FAILED,
// OUT_OF_MEMORY, BOOT_FAIL, DEADLINE.
bool IsFailedEnd(JobState state);

}  // namespace baton
