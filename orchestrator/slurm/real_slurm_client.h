// RealSlurmClient: SlurmClient over SLURM's command-line tools, run with RunProcess (argv,
// never a shell) and a timeout. The controller being down shows up as a kUnavailable naming the
// command and SLURM's own message. Stateless; thread-safe.
#pragma once

#include "orchestrator/slurm/slurm_client.h"

namespace baton {

// Seconds one SLURM command may take before it is killed: $BATON_SLURM_TIMEOUT_S or 60
// (scontrol retries an unreachable controller for about 20 s before giving up on its own).
double SlurmCommandTimeout();

class RealSlurmClient : public SlurmClient {
 public:
  explicit RealSlurmClient(double timeout_s = SlurmCommandTimeout()) : timeout_s_(timeout_s) {}

  Result<std::string> Submit(const std::string& script_path) override;
  Result<std::string> SubmitArray(const std::string& script_path,
                                  const std::string& array_spec) override;
  Result<std::optional<JobInfo>> GetJob(const std::string& job_id) override;
  Result<std::map<std::string, JobInfo>> GetJobs(const std::vector<std::string>& job_ids) override;
  Status Requeue(const std::string& job_id) override;
  Status Cancel(const std::string& job_id) override;
  Status ReleaseHold(const std::string& job_id) override;
  Result<PreemptGrace> GetPreemptGrace(const std::string& partition) override;
  Result<std::map<std::string, std::string>> ShowConfig() override;
  Result<std::vector<std::string>> ListPartitionNodes(const std::string& partition) override;
  Status SetExcludedNodes(const std::string& job_id, const std::string& nodes) override;

 private:
  Result<std::string> SubmitArgv(const std::vector<std::string>& argv,
                                 const std::string& script_path);
  double timeout_s_;
};

}  // namespace baton
