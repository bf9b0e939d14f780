#include "orchestrator/slurm/fake_slurm_client.h"

#include "orchestrator/slurm/job_state.h"

namespace baton {

Status FakeSlurmClient::DownError(const char* command) const {
  return Status::Unavailable(std::string("'") + command +
                             "': the SLURM controller is not reachable: Unable to contact slurm "
                             "controller (connect failure)");
}

Result<std::string> FakeSlurmClient::Submit(const std::string& script_path) {
  if (down) return DownError("sbatch");
  if (!reject_message.empty())
    return Status::Config("sbatch rejected " + script_path + ": " + reject_message);
  const std::string id = std::to_string(next_id_++);
  JobInfo info;
  info.job_id = id;
  info.state = Name(JobState::kPending);
  info.reason = "None";
  jobs_[id] = info;
  submitted.push_back(script_path);
  return id;
}

Result<std::string> FakeSlurmClient::SubmitArray(const std::string& script_path,
                                                 const std::string& array_spec) {
  const std::vector<int64_t> tasks = ArrayTaskIds(array_spec);
  if (!down && reject_message.empty() && tasks.empty())
    return Status::Config("sbatch rejected " + script_path + ": invalid --array=" + array_spec);
  BATON_ASSIGN_OR_RETURN(const std::string id, Submit(script_path));
  jobs_.erase(id);  // the array is its tasks
  for (const int64_t t : tasks)
    SetState(id + "_" + std::to_string(t), Name(JobState::kPending), "None");
  arrays.push_back(array_spec);
  return id;
}

Result<std::map<std::string, JobInfo>> FakeSlurmClient::GetJobs(
    const std::vector<std::string>& job_ids) {
  if (down) return DownError("scontrol -o show job");
  ++job_queries;
  std::map<std::string, JobInfo> out;
  for (const std::string& id : job_ids) {
    if (const auto it = jobs_.find(id); it != jobs_.end()) out.emplace(id, it->second);
  }
  return out;
}

Result<std::optional<JobInfo>> FakeSlurmClient::GetJob(const std::string& job_id) {
  if (down) return DownError("scontrol show job");
  ++job_queries;
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return std::optional<JobInfo>();
  return std::optional<JobInfo>(it->second);
}

Status FakeSlurmClient::Requeue(const std::string& job_id) {
  if (down) return DownError("scontrol requeue");
  auto it = jobs_.find(job_id);
  if (it == jobs_.end())
    return Status::Unavailable("scontrol requeue " + job_id + ": Invalid job id specified");
  it->second.state = Name(JobState::kPending);
  it->second.reason = "BeginTime";
  it->second.restarts += 1;
  requeued.push_back(job_id);
  return Status::Ok();
}

Status FakeSlurmClient::Cancel(const std::string& job_id) {
  if (down) return DownError("scancel");
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second.state = Name(JobState::kCancelled);
  // scancel ARRAY cancels every task of it.
  for (auto& [id, job] : jobs_) {
    if (id.rfind(job_id + "_", 0) == 0 && ParseJobState(job.state) != JobState::kCompleted)
      job.state = Name(JobState::kCancelled);
  }
  cancelled.push_back(job_id);
  return Status::Ok();
}

Status FakeSlurmClient::ReleaseHold(const std::string& job_id) {
  if (down) return DownError("scontrol update");
  if (!refuse_release.empty()) {
    return Status::Config("'scontrol update JobId=" + job_id +
                          " StartTime=now' was refused: " + refuse_release);
  }
  auto it = jobs_.find(job_id);
  if (it == jobs_.end())
    return Status::Config("scontrol update JobId=" + job_id + ": Invalid job id specified");
  if (it->second.reason == "BeginTime") it->second.reason = "None";
  released.push_back(job_id);
  return Status::Ok();
}

void FakeSlurmClient::SetState(const std::string& job_id, const std::string& state,
                               const std::string& reason) {
  JobInfo& j = jobs_[job_id];
  j.job_id = job_id;
  j.state = state;
  j.reason = reason;
}

JobInfo* FakeSlurmClient::job(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

Result<PreemptGrace> FakeSlurmClient::GetPreemptGrace(const std::string& partition) {
  if (down) return DownError("scontrol show partition");
  PreemptGrace g = grace;
  if (!partition.empty()) g.partition = partition;
  return g;
}

Result<std::map<std::string, std::string>> FakeSlurmClient::ShowConfig() {
  if (down) return DownError("scontrol show config");
  return config;
}

Result<std::vector<std::string>> FakeSlurmClient::ListPartitionNodes(const std::string&) {
  if (down) return DownError("sinfo");
  return partition_nodes;
}

Status FakeSlurmClient::SetExcludedNodes(const std::string& job_id, const std::string& nodes) {
  if (down) return DownError("scontrol update");
  auto it = jobs_.find(job_id);
  if (it == jobs_.end())
    return Status::Config("scontrol update JobId=" + job_id + ": Invalid job id specified");
  it->second.fields["ExcNodeList"] = nodes.empty() ? "(null)" : nodes;
  excluded.push_back(job_id + "=" + nodes);
  return Status::Ok();
}

}  // namespace baton
