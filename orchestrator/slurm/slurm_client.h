// SlurmClient: the one seam between baton and SLURM's commands.
//
// Only implementations of this interface run sbatch, scontrol, squeue or scancel (sacct is not
// used: the dev cluster has no accounting, and scontrol sees finished jobs for MinJobAge).
// RealSlurmClient runs the commands (real_slurm_client.h); FakeSlurmClient is an in-memory
// cluster for unit tests (fake_slurm_client.h). Every failure to reach SLURM is
// Code::kUnavailable (exit 69) with a message naming the command. Implementations are not
// required to be thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

// What `scontrol show job` says about one job.
struct JobInfo {
  std::string job_id;
  std::string state;      // JobState: PENDING, RUNNING, COMPLETED, FAILED, PREEMPTED, ...
  std::string reason;     // Reason (e.g. BeginTime after a requeue, Resources)
  int64_t restarts = 0;   // Restarts (== SLURM_RESTART_COUNT of the next start)
  std::string exit_code;  // ExitCode "0:0" (status:signal)
  std::string nodes;      // NodeList
  std::string partition;
  std::map<std::string, std::string> fields;  // everything, for diagnostics
};

// How long a preempted job of a partition lives after SLURM's first signal: the partition's
// GraceTime, then the SIGTERM -> SIGKILL wait of the end sequence (KillWait). SLURM sets a
// preempted job's end to now + GraceTime and then signals SIGCONT, SIGTERM and, KillWait seconds
// later, SIGKILL.
struct PreemptGrace {
  std::string partition;     // the one asked about, or the default partition's name
  int64_t grace_time_s = 0;  // PartitionName=... GraceTime=
  int64_t kill_wait_s = 0;   // scontrol show config: KillWait
  int64_t total_s() const { return grace_time_s + kill_wait_s; }
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;

  // sbatch --parsable SCRIPT; the job id. kUnavailable when sbatch is missing or the controller
  // is down; kConfig when SLURM rejects the job (bad partition, resources, ...).
  [[nodiscard]] virtual Result<std::string> Submit(const std::string& script_path) = 0;

  // scontrol show job JOB; nullopt when SLURM no longer knows the job (it aged out).
  [[nodiscard]] virtual Result<std::optional<JobInfo>> GetJob(const std::string& job_id) = 0;

  // What SLURM knows of each of `job_ids`, in ONE command run whatever their number (a sync pass
  // asks about every live job at once: polling once per job is what overloads slurmctld). An id
  // SLURM no longer knows is absent from the answer. Array tasks are keyed "<array>_<task>", as
  // asked. The default asks GetJob once per id, for clients that cannot batch.
  [[nodiscard]] virtual Result<std::map<std::string, JobInfo>> GetJobs(
      const std::vector<std::string>& job_ids);

  // sbatch --parsable --array=SPEC SCRIPT ("0-15%4"); the array's job id. Errors as Submit's.
  // The default refuses: a client that cannot submit arrays.
  [[nodiscard]] virtual Result<std::string> SubmitArray(const std::string& script_path,
                                                        const std::string& array_spec);

  // scontrol requeue JOB.
  [[nodiscard]] virtual Status Requeue(const std::string& job_id) = 0;

  // scancel JOB.
  [[nodiscard]] virtual Status Cancel(const std::string& job_id) = 0;

  // scontrol update JobId=JOB StartTime=now: ends the hold SLURM puts on a requeued job
  // (BeginTime = requeue + ~2 min). kUnavailable when SLURM cannot be reached; kConfig when it
  // answers but refuses (a site that does not let owners move their start time).
  [[nodiscard]] virtual Status ReleaseHold(const std::string& job_id) = 0;

  // scontrol show partition / show config. `partition` "" means the default partition.
  // kConfig when the partition does not exist; kUnavailable when SLURM cannot be reached.
  [[nodiscard]] virtual Result<PreemptGrace> GetPreemptGrace(const std::string& partition) = 0;

  // scontrol show config, as key -> value ("ClusterName" -> "baton-dev", "SlurmUser" ->
  // "slurm(64030)"). kUnavailable when SLURM cannot be reached. A client that knows no
  // configuration answers none.
  [[nodiscard]] virtual Result<std::map<std::string, std::string>> ShowConfig() {
    return std::map<std::string, std::string>{};
  }

  // The node names of a partition (sinfo -h -N -p PARTITION -o %N; docs/nodes.md). kUnavailable
  // when SLURM cannot be reached or the client cannot list nodes.
  [[nodiscard]] virtual Result<std::vector<std::string>> ListPartitionNodes(
      const std::string& partition) {
    return Status::Unavailable("this SLURM client cannot list the nodes of '" + partition + "'");
  }

  // scontrol update JobId=JOB ExcNodeList=NODES (NODES "a,b" of valid host names; "" clears it).
  // kConfig when SLURM answers but refuses; kUnavailable when it cannot be reached.
  [[nodiscard]] virtual Status SetExcludedNodes(const std::string& job_id,
                                                const std::string& nodes) {
    return Status::Unavailable("this SLURM client cannot exclude nodes (" + job_id + ": " + nodes +
                               ")");
  }
};

// The lines "Key = value" of `scontrol show config`, as key -> value (spaces around '=' trimmed).
std::map<std::string, std::string> ParseShowConfig(const std::string& show_config_out);

// SLURM's ClusterName ('' when the configuration has none, or SLURM could not say).
[[nodiscard]] Result<std::string> SlurmClusterName(SlurmClient& slurm);

// From the lines of `scontrol -o show partition`: the named partition (or the one marked
// Default=YES when `partition` is "") and its GraceTime. kConfig naming the partition when none
// matches, or when its GraceTime is not a number of seconds.
[[nodiscard]] Result<PreemptGrace> ParsePartitionGrace(const std::string& scontrol_out,
                                                       const std::string& partition);

// KillWait's seconds from `scontrol show config` ("KillWait                = 30 sec").
[[nodiscard]] Result<int64_t> ParseKillWait(const std::string& show_config_out);

// Parses one line of `scontrol -o show job` ("JobId=12 JobName=x ... JobState=RUNNING ...").
// Values may contain spaces (Command=, Reason=); a token starts a new field only when it looks
// like "Key=" with Key made of letters, digits, ':' and '/'.
// An array task's job_id is "<ArrayJobId>_<ArrayTaskId>" (what baton stores for a sweep member
// and what scontrol accepts back); any other job's is its JobId.
JobInfo ParseScontrolJob(const std::string& line);

// Every line of `scontrol -o show job` keyed by job id. An array's tasks that are still pending
// as one record (ArrayTaskId=3-15%4) are keyed by each of those tasks, "<array>_<task>", each
// a copy with that job_id; a record that is an array task is also keyed by its plain JobId.
std::map<std::string, JobInfo> IndexScontrolJobs(const std::string& scontrol_out);

// The task ids of an ArrayTaskId value: "3-15%4" -> 3..15, "1,4-5" -> 1,4,5; empty when the
// value is not a list of ids or ranges (at most `limit` ids, the rest dropped).
std::vector<int64_t> ArrayTaskIds(const std::string& value, size_t limit = 1000000);

// True for messages that mean the controller could not be reached (so kUnavailable).
bool LooksLikeControllerDown(const std::string& stderr_text);

}  // namespace baton
