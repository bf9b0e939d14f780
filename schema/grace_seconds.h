// BATON_GRACE_S, the seconds a stop signal leaves a job before SLURM kills it: written into the
// job script by `baton submit` and `baton resume` (orchestrator/submit/grace_check.h), read by the
// trainer's async saver (trainer/ckpt/async_saver.h). One spelling and one range, here, so what
// the orchestrator writes is always what the trainer accepts.
//
// The text is plain decimal seconds: digits, optionally a point and more digits ("30", "2.5").
// No sign, exponent, hex, "inf" or "nan" (strtod would take all of them), and at most
// kMaxGraceS. Pure functions; thread-safe.
#pragma once

#include <string>

#include "schema/status.h"

namespace baton {

inline constexpr const char* kGraceEnv = "BATON_GRACE_S";
// Seconds; slurm.preempt_grace_s's own upper bound. A longer grace is, for a save, no limit.
inline constexpr double kMaxGraceS = 86400;

// The seconds `text` says; kConfig naming kGraceEnv and the value otherwise.
[[nodiscard]] Result<double> ParseGraceSeconds(const std::string& text);

// `seconds` as the job script exports it: whole seconds, clamped into [0, kMaxGraceS].
std::string GraceSecondsText(double seconds);

}  // namespace baton
