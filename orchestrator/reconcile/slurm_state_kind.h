// What an attempt's recorded SLURM state stands for, for the CLI, the API and the sync pass.
//
// The sync pass (reconciler.h) writes the job state it sees into the open attempt. While the
// attempt runs that is RUNNING. Once it has ended, SLURM reports the start's final state
// (COMPLETED, FAILED, ...) only while the finished job is still in the controller's memory
// (MinJobAge, 300 s by default): `squeue` drops it sooner, and without an accounting daemon
// `sacct` has nothing. So the recorded state of an ended attempt is either SLURM's final word on
// that start, or only the state the sync pass last saw while it ran; the sync pass follows a run
// that ended up for kSlurmFinalStateFollowUpS to learn the final one, and whatever prints a state
// says which of the two it is. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "orchestrator/store/records.h"
#include "schema/vocabularies.h"

namespace baton {

// How long after a run ended the sync pass still asks SLURM for its last start's final state:
// three times SLURM's default MinJobAge (a job older than that is gone from scontrol).
inline constexpr double kSlurmFinalStateFollowUpS = 900;

enum class SlurmStateKind {
  kCurrent,   // the attempt is still open: the state is the job's present one
  kFinal,     // SLURM's final state of this start (or reconcile's REQUEUED / UNKNOWN verdict)
  kLastSeen,  // the attempt ended, but the state is a live one (RUNNING, ...) seen before that
};

// The JSON names (`slurm_state_kind`); an attempt with no state recorded has no kind: null.
template <>
struct Vocabulary<SlurmStateKind> {
  static constexpr Word<SlurmStateKind> kWords[] = {{SlurmStateKind::kCurrent, "current"},
                                                    {SlurmStateKind::kFinal, "final"},
                                                    {SlurmStateKind::kLastSeen, "last_seen"}};
};

// A state SLURM reports once a start of the job is over (IsStartOver, slurm/job_state.h), or one
// reconcile writes for a start it closed (REQUEUED: Restarts moved past it; UNKNOWN: the job was
// gone).
bool IsFinalSlurmState(const std::string& state);

// The launcher or reconcile closed the attempt (an end action or reason, or an end time).
bool AttemptEnded(const AttemptRecord& a);

// None when no state is recorded (the sync pass never saw the job during this start).
std::optional<SlurmStateKind> ClassifySlurmState(const AttemptRecord& a);

}  // namespace baton
