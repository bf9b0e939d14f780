// Process exit codes shared by both binaries (sysexits.h numbering where one fits).
//
// The launcher decides whether to requeue from the trainer's exit code alone, so these values are
// part of the contract between `baton` and `baton-train` (docs/design.md, "Exit codes").
#pragma once

namespace baton {

inline constexpr int kExitOk = 0;       // done: the target step was reached
inline constexpr int kExitFailure = 1;  // generic failure (a crash for the launcher)
inline constexpr int kExitUsage = 64;   // bad command line
inline constexpr int kExitData = 65;  // dataset / checkpoint file missing or corrupt: never requeue
inline constexpr int kExitNotFound = 66;     // an unknown run or input the user named
inline constexpr int kExitUnavailable = 69;  // SLURM or another service is not reachable
inline constexpr int kExitInternal = 70;     // an internal invariant broke
// `baton store copy`: the target store already holds a history (and --merge was not given).
inline constexpr int kExitTargetNotEmpty = 73;
inline constexpr int kExitIo = 74;       // a read or write the OS refused
inline constexpr int kExitRequeue = 75;  // checkpointed on a stop signal: requeue me
// A node of the job failed the preflight (docs/nodes.md): requeue with the node excluded,
// spending no crash budget.
inline constexpr int kExitNodeUnhealthy = 76;
inline constexpr int kExitConfig = 78;  // the run config is invalid: never requeue
// Training diverged: train.max_nonfinite_steps consecutive steps had a NaN/Inf loss or gradient
// norm (none was applied), or the state turned non-finite. Never requeue: a resume would
// diverge again from the same checkpoint and data.
inline constexpr int kExitDiverged = 79;

}  // namespace baton
