// FakeSlurmClient: an in-memory SLURM for unit tests of submit, reconcile and the launcher.
//
// Jobs get ids 1000, 1001, ... (an array's tasks "<id>_0", "<id>_1", ...); tests move them between
// states with SetState() and read what was asked of SLURM (submitted scripts, requeues, cancels).
// `down` makes every call fail with kUnavailable as a stopped controller does. Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "orchestrator/slurm/slurm_client.h"

namespace baton {

class FakeSlurmClient : public SlurmClient {
 public:
  Result<std::string> Submit(const std::string& script_path) override;
  Result<std::string> SubmitArray(const std::string& script_path,
                                  const std::string& array_spec) override;
  Result<std::optional<JobInfo>> GetJob(const std::string& job_id) override;
  // One simulated `scontrol -o show job` for all of `job_ids`.
  Result<std::map<std::string, JobInfo>> GetJobs(const std::vector<std::string>& job_ids) override;
  Status Requeue(const std::string& job_id) override;
  Status Cancel(const std::string& job_id) override;
  Status ReleaseHold(const std::string& job_id) override;
  Result<PreemptGrace> GetPreemptGrace(const std::string& partition) override;
  Result<std::map<std::string, std::string>> ShowConfig() override;
  Result<std::vector<std::string>> ListPartitionNodes(const std::string& partition) override;
  // Sets the job's fields["ExcNodeList"] and records the call in `excluded`.
  Status SetExcludedNodes(const std::string& job_id, const std::string& nodes) override;

  // Test controls.
  void SetState(const std::string& job_id, const std::string& state,
                const std::string& reason = "");
  void Forget(const std::string& job_id) { jobs_.erase(job_id); }  // aged out of scontrol
  JobInfo* job(const std::string& job_id);

  bool down = false;                   // controller unreachable
  std::string reject_message;          // non-empty: sbatch rejects with this
  std::vector<std::string> submitted;  // script paths, in order
  std::vector<std::string> arrays;     // the --array= spec of each SubmitArray, in order
  int job_queries = 0;                 // command runs that asked about jobs (GetJob, GetJobs)
  std::vector<std::string> requeued;   // job ids
  std::vector<std::string> cancelled;  // job ids
  std::vector<std::string> released;   // job ids whose requeue hold was released
  std::string refuse_release;          // non-empty: scontrol update refuses with this
  // What GetPreemptGrace answers for every partition (the dev cluster's debug partition).
  PreemptGrace grace{"debug", 30, 5};
  // What ListPartitionNodes answers for every partition.
  std::vector<std::string> partition_nodes{"node-a", "node-b"};
  std::vector<std::string> excluded;  // "JOB=NODES", in order
  // What ShowConfig answers.
  std::map<std::string, std::string> config{{"ClusterName", "fake"}, {"SlurmUser", "slurm(64030)"}};

 private:
  Status DownError(const char* command) const;
  int next_id_ = 1000;
  std::map<std::string, JobInfo> jobs_;
};

}  // namespace baton
