#include "orchestrator/slurm/real_slurm_client.h"

#include <cctype>
#include <cstdlib>

#include "orchestrator/slurm/process_runner.h"

namespace baton {

namespace {

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Runs a SLURM command; kUnavailable when it is missing, timed out or the controller is down.
Result<ProcessResult> RunSlurm(const std::vector<std::string>& argv, double timeout_s) {
  Result<ProcessResult> r = RunProcess(argv, timeout_s);
  if (!r.ok()) return r.status().Annotate(argv[0]);
  if (r->timed_out) {
    return Status::Unavailable("'" + CommandLine(argv) + "' did not answer within " +
                               std::to_string(static_cast<int>(timeout_s)) +
                               " s; is the SLURM controller up? (scontrol ping)");
  }
  if (r->exit_code != 0 && LooksLikeControllerDown(r->err)) {
    return Status::Unavailable("'" + CommandLine(argv) +
                               "': the SLURM controller is not reachable: " + Trim(r->err));
  }
  return r;
}

}  // namespace

double SlurmCommandTimeout() {
  const char* v = std::getenv("BATON_SLURM_TIMEOUT_S");
  if (v != nullptr && *v != '\0') {
    const double t = std::atof(v);
    if (t > 0) return t;
  }
  return 60.0;
}

Result<std::string> RealSlurmClient::Submit(const std::string& script_path) {
  return SubmitArgv({"sbatch", "--parsable", script_path}, script_path);
}

Result<std::string> RealSlurmClient::SubmitArray(const std::string& script_path,
                                                 const std::string& array_spec) {
  return SubmitArgv({"sbatch", "--parsable", "--array=" + array_spec, script_path}, script_path);
}

Result<std::string> RealSlurmClient::SubmitArgv(const std::vector<std::string>& argv,
                                                const std::string& script_path) {
  Result<ProcessResult> r = RunSlurm(argv, timeout_s_);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status::Config("sbatch rejected " + script_path + ": " + Trim(r->err));
  }
  // --parsable prints "jobid" or "jobid;cluster".
  std::string id = Trim(r->out);
  id = id.substr(0, id.find(';'));
  if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos) {
    return Status::Internal("sbatch --parsable printed no job id: '" + Trim(r->out) + "'");
  }
  return id;
}

Result<std::optional<JobInfo>> RealSlurmClient::GetJob(const std::string& job_id) {
  const std::vector<std::string> argv = {"scontrol", "-o", "show", "job", job_id};
  Result<ProcessResult> r = RunSlurm(argv, timeout_s_);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    if (r->err.find("Invalid job id") != std::string::npos) return std::optional<JobInfo>();
    return Status::Unavailable("'" + CommandLine(argv) + "' failed: " + Trim(r->err));
  }
  // An array task asked as "<array>_<task>" may still be in the array's pending record.
  const std::map<std::string, JobInfo> jobs = IndexScontrolJobs(r->out);
  if (const auto it = jobs.find(job_id); it != jobs.end())
    return std::optional<JobInfo>(it->second);
  // An array or heterogeneous job prints several lines; the first is the job itself.
  const std::string first = r->out.substr(0, r->out.find('\n'));
  if (Trim(first).empty()) return std::optional<JobInfo>();
  return std::optional<JobInfo>(ParseScontrolJob(first));
}

Result<std::map<std::string, JobInfo>> RealSlurmClient::GetJobs(
    const std::vector<std::string>& job_ids) {
  std::map<std::string, JobInfo> asked;
  if (job_ids.empty()) return asked;
  // Every job the controller holds, in one run: scontrol takes one id at a time, and the whole
  // table also holds the jobs that ended within MinJobAge (there is no accounting to ask).
  const std::vector<std::string> argv = {"scontrol", "-o", "show", "job"};
  Result<ProcessResult> r = RunSlurm(argv, timeout_s_);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status::Unavailable("'" + CommandLine(argv) + "' failed: " + Trim(r->err));
  }
  const std::map<std::string, JobInfo> all = IndexScontrolJobs(r->out);
  for (const std::string& id : job_ids) {
    if (const auto it = all.find(id); it != all.end()) asked.emplace(id, it->second);
  }
  return asked;
}

Status RealSlurmClient::Requeue(const std::string& job_id) {
  const std::vector<std::string> argv = {"scontrol", "requeue", job_id};
  Result<ProcessResult> r = RunSlurm(argv, timeout_s_);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status::Unavailable("'" + CommandLine(argv) + "' failed: " + Trim(r->err));
  }
  return Status::Ok();
}

Status RealSlurmClient::Cancel(const std::string& job_id) {
  const std::vector<std::string> argv = {"scancel", job_id};
  Result<ProcessResult> r = RunSlurm(argv, timeout_s_);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    if (r->err.find("Invalid job id") != std::string::npos ||
        r->err.find("already completing or completed") != std::string::npos) {
      return Status::Ok();  // nothing left to cancel
    }
    return Status::Unavailable("'" + CommandLine(argv) + "' failed: " + Trim(r->err));
  }
  return Status::Ok();
}

Status RealSlurmClient::ReleaseHold(const std::string& job_id) {
  const std::vector<std::string> argv = {"scontrol", "update", "JobId=" + job_id, "StartTime=now"};
  Result<ProcessResult> r = RunSlurm(argv, timeout_s_);
  if (!r.ok()) return r.status();  // missing, timed out, controller down
  if (r->exit_code != 0) {
    return Status::Config("'" + CommandLine(argv) + "' was refused: " + Trim(r->err));
  }
  return Status::Ok();
}

Result<PreemptGrace> RealSlurmClient::GetPreemptGrace(const std::string& partition) {
  const std::vector<std::string> parts = {"scontrol", "-o", "show", "partition"};
  Result<ProcessResult> p = RunSlurm(parts, timeout_s_);
  if (!p.ok()) return p.status();
  if (p->exit_code != 0) {
    return Status::Unavailable("'" + CommandLine(parts) + "' failed: " + Trim(p->err));
  }
  BATON_ASSIGN_OR_RETURN(PreemptGrace g, ParsePartitionGrace(p->out, partition));
  const std::vector<std::string> config = {"scontrol", "show", "config"};
  Result<ProcessResult> c = RunSlurm(config, timeout_s_);
  if (!c.ok()) return c.status();
  if (c->exit_code != 0) {
    return Status::Unavailable("'" + CommandLine(config) + "' failed: " + Trim(c->err));
  }
  BATON_ASSIGN_OR_RETURN(g.kill_wait_s, ParseKillWait(c->out));
  return g;
}

Result<std::map<std::string, std::string>> RealSlurmClient::ShowConfig() {
  const std::vector<std::string> argv = {"scontrol", "show", "config"};
  Result<ProcessResult> c = RunSlurm(argv, timeout_s_);
  if (!c.ok()) return c.status();
  if (c->exit_code != 0) {
    return Status::Unavailable("'" + CommandLine(argv) + "' failed: " + Trim(c->err));
  }
  return ParseShowConfig(c->out);
}

Result<std::vector<std::string>> RealSlurmClient::ListPartitionNodes(const std::string& partition) {
  // No partition: every node (the default partition's among them).
  std::vector<std::string> argv = {"sinfo", "-h", "-N", "-o", "%N"};
  if (!partition.empty()) argv.insert(argv.end(), {"-p", partition});
  Result<ProcessResult> r = RunSlurm(argv, timeout_s_);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status::Unavailable("'" + CommandLine(argv) + "' failed: " + Trim(r->err));
  }
  std::vector<std::string> nodes;
  size_t start = 0;
  while (start < r->out.size()) {
    size_t end = r->out.find('\n', start);
    if (end == std::string::npos) end = r->out.size();
    const std::string name = Trim(r->out.substr(start, end - start));
    if (!name.empty() && (nodes.empty() || nodes.back() != name)) nodes.push_back(name);
    start = end + 1;
  }
  return nodes;
}

Status RealSlurmClient::SetExcludedNodes(const std::string& job_id, const std::string& nodes) {
  const std::vector<std::string> argv = {"scontrol", "update", "JobId=" + job_id,
                                         "ExcNodeList=" + nodes};
  Result<ProcessResult> r = RunSlurm(argv, timeout_s_);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status::Config("'" + CommandLine(argv) + "' was refused: " + Trim(r->err));
  }
  return Status::Ok();
}

}  // namespace baton
