// Acting on a hung rank: proving the process is this attempt's own rank, capturing its stacks,
// and ending the job step (docs/orchestrator.md, "Hangs").
//
// A heartbeat file is written by whoever can write the run folder, so the PID in it is a claim,
// never a target. VerifyRank accepts it only when the launcher can prove the process is one of
// its own step's ranks, and returns what was proved:
//   * no srun (the launcher ran the trainer itself): the PID is the forked child or one of its
//     descendants (/proc/PID/stat's parent chain), on this host;
//   * srun: SLURM lists the PID as task `rank` (GLOBALID) of this job's step on the record's
//     node: `scontrol listpids JOB NODE`, run here when the node is on this host, else on the
//     node through the job's allocation (`srun --jobid J --overlap -N1 -n1 -w NODE scontrol ...`).
// CaptureStacks runs `gdb -batch -p PID -ex 'thread apply all bt'` (or `eu-stack -p PID` when gdb
// is not installed) on a verified rank only, bounded to 30 s, through the allocation when the
// rank runs on another host. EndStep never names a PID from a file: with srun it signals the
// verified job step through SLURM (`scancel --signal=KILL JOB.STEP`, which reaches only that
// step's tasks); without, SIGKILL goes to the verified descendants and the launcher's own child.
// The commands are built by the *Command functions, so every path is testable without a second
// machine. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/heartbeat_record.h"
#include "schema/status.h"

namespace baton {

inline constexpr double kStackCaptureTimeoutS = 30;

// gethostname().
std::string ThisHost();

// What the launcher may act on: its own child, or (srun) the tasks of its job's steps.
struct StepScope {
  std::string job_id;
  bool srun = false;  // the child is srun: ranks are tasks of a job step
  int child_pid = 0;  // the process the launcher forked (the trainer itself without srun)
  std::string this_host;
};

// A rank the launcher proved is its own: the heartbeat's claim, checked.
struct VerifiedRank {
  HeartbeatRecord beat;
  std::string step;  // srun: the job step id SLURM reported ("0", "3"); "" without srun
};

// The step id of the line of `scontrol listpids` output naming `pid` as task `rank` of job
// `job_id` (columns PID JOBID STEPID LOCALID GLOBALID); nullopt when no line does, or when the
// step is not a numbered one (batch, extern).
std::optional<std::string> FindTaskInListPids(const std::string& listpids,
                                              const std::string& job_id, int64_t rank, int64_t pid);
// Whether `pid` is `ancestor` or one of its descendants, by /proc/PID/stat's parent chain.
bool IsSelfOrDescendant(int64_t pid, int64_t ancestor);

// The argv that lists the job's tasks on `beat`'s node: `scontrol listpids JOB NODE`, wrapped in
// srun --overlap when the node is on another host.
std::vector<std::string> ListPidsCommand(const HeartbeatRecord& beat, const std::string& job_id,
                                         const std::string& this_host);
// The argv that captures every thread's stack of `beat`'s process: gdb or eu-stack (whichever
// is installed, gdb first), wrapped in srun --overlap when the rank runs on another host.
std::vector<std::string> StackCommand(const HeartbeatRecord& beat, const std::string& job_id,
                                      const std::string& this_host, const std::string& debugger);
// `scancel --signal=KILL --quiet JOB.STEP`.
std::vector<std::string> EndStepCommand(const std::string& job_id, const std::string& step);

// The rank, proved; or Code::kNotFound saying why the claim was refused ("pid 4242 is not a task
// of job 55 on node gpu7"), kUnavailable when SLURM could not be asked.
[[nodiscard]] Result<VerifiedRank> VerifyRank(const HeartbeatRecord& beat, const StepScope& scope);

// The stacks as text (the tool's output), or why there are none ("gdb timed out after 30 s").
std::string CaptureStacks(const VerifiedRank& rank, const StepScope& scope);
// Ends the ranks: with srun every verified step through SLURM, else SIGKILL to the verified
// descendants and to the child. Returns what was done, for the log.
std::string EndStep(const std::vector<VerifiedRank>& ranks, const StepScope& scope);

}  // namespace baton
