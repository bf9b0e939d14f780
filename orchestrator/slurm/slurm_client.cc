#include "orchestrator/slurm/slurm_client.h"

#include <cctype>
#include <optional>

namespace baton {

namespace {

// "Key=" at `pos`: returns the length of Key, or 0.
size_t FieldKeyLength(const std::string& s, size_t pos) {
  size_t i = pos;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == ':' ||
                          s[i] == '/' || s[i] == '_')) {
    ++i;
  }
  return (i > pos && i < s.size() && s[i] == '=') ? i - pos : 0;
}

int64_t ToInt(const std::string& s) {
  try {
    return s.empty() ? 0 : std::stoll(s);
  } catch (...) {
    return 0;
  }
}

}  // namespace

JobInfo ParseScontrolJob(const std::string& line) {
  JobInfo info;
  std::string text = line;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  size_t pos = 0;
  std::string key;
  size_t value_start = 0;
  auto flush = [&](size_t value_end) {
    if (!key.empty()) {
      std::string v = text.substr(value_start, value_end - value_start);
      while (!v.empty() && v.back() == ' ') v.pop_back();
      info.fields[key] = v;
    }
  };
  while (pos < text.size()) {
    const bool at_token = pos == 0 || text[pos - 1] == ' ';
    const size_t klen = at_token ? FieldKeyLength(text, pos) : 0;
    if (klen > 0) {
      flush(pos);
      key = text.substr(pos, klen);
      value_start = pos + klen + 1;
      pos = value_start;
      continue;
    }
    ++pos;
  }
  flush(text.size());
  info.job_id = info.fields["JobId"];
  const auto array = info.fields.find("ArrayJobId");
  const auto task = info.fields.find("ArrayTaskId");
  if (array != info.fields.end() && task != info.fields.end() && !task->second.empty() &&
      task->second.find_first_not_of("0123456789") == std::string::npos) {
    info.job_id = array->second + "_" + task->second;
  }
  info.state = info.fields["JobState"];
  info.reason = info.fields["Reason"];
  info.restarts = ToInt(info.fields["Restarts"]);
  info.exit_code = info.fields["ExitCode"];
  info.nodes = info.fields["NodeList"];
  info.partition = info.fields["Partition"];
  if (info.nodes == "(null)") info.nodes.clear();
  return info;
}

std::vector<int64_t> ArrayTaskIds(const std::string& value, size_t limit) {
  std::vector<int64_t> ids;
  const std::string list = value.substr(0, value.find('%'));
  size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string part = list.substr(start, end - start);
    const size_t dash = part.find('-');
    const std::string lo_text = part.substr(0, dash);
    const std::string hi_text = dash == std::string::npos ? lo_text : part.substr(dash + 1);
    auto digits = [](const std::string& t) {
      return !t.empty() && t.size() < 10 && t.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!digits(lo_text) || !digits(hi_text)) return {};
    for (int64_t i = std::stoll(lo_text); i <= std::stoll(hi_text) && ids.size() < limit; ++i) {
      ids.push_back(i);
    }
    start = end + 1;
  }
  return ids;
}

std::map<std::string, JobInfo> IndexScontrolJobs(const std::string& out) {
  std::map<std::string, JobInfo> jobs;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    start = end + 1;
    if (line.rfind("JobId=", 0) != 0) continue;  // "No jobs in the system", blank lines
    JobInfo job = ParseScontrolJob(line);
    const auto array = job.fields.find("ArrayJobId");
    const auto task = job.fields.find("ArrayTaskId");
    if (array != job.fields.end() && task != job.fields.end() &&
        job.job_id == job.fields["JobId"]) {
      // Tasks not started yet share the array's one pending record.
      for (const int64_t t : ArrayTaskIds(task->second)) {
        JobInfo copy = job;
        copy.job_id = array->second + "_" + std::to_string(t);
        jobs.emplace(copy.job_id, copy);
      }
    }
    jobs.emplace(job.fields["JobId"], job);
    jobs[job.job_id] = std::move(job);
  }
  return jobs;
}

Result<std::map<std::string, JobInfo>> SlurmClient::GetJobs(
    const std::vector<std::string>& job_ids) {
  std::map<std::string, JobInfo> jobs;
  for (const std::string& id : job_ids) {
    if (jobs.count(id) > 0) continue;
    BATON_ASSIGN_OR_RETURN(const std::optional<JobInfo> job, GetJob(id));
    if (job) jobs.emplace(id, *job);
  }
  return jobs;
}

Result<std::string> SlurmClient::SubmitArray(const std::string& script_path,
                                             const std::string& array_spec) {
  return Status::Internal("this SLURM client cannot submit an array (" + array_spec + ") for " +
                          script_path);
}

bool LooksLikeControllerDown(const std::string& s) {
  for (const char* needle :
       {"Unable to contact slurm controller", "Socket timed out", "Connection refused",
        "connect failure", "Could not establish a configuration source",
        "Zero Bytes were transmitted", "Communication connection failure",
        "Unable to establish controller machine"}) {
    if (s.find(needle) != std::string::npos) return true;
  }
  return false;
}

namespace {

// A whole non-negative number of seconds, or nullopt.
std::optional<int64_t> Seconds(const std::string& v) {
  if (v.empty() || v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(v);
}

}  // namespace

Result<PreemptGrace> ParsePartitionGrace(const std::string& scontrol_out,
                                         const std::string& partition) {
  size_t start = 0;
  while (start < scontrol_out.size()) {
    size_t end = scontrol_out.find('\n', start);
    if (end == std::string::npos) end = scontrol_out.size();
    const JobInfo line = ParseScontrolJob(scontrol_out.substr(start, end - start));
    start = end + 1;
    const auto name = line.fields.find("PartitionName");
    if (name == line.fields.end()) continue;
    const auto dflt = line.fields.find("Default");
    const bool match = partition.empty() ? dflt != line.fields.end() && dflt->second == "YES"
                                         : name->second == partition;
    if (!match) continue;
    PreemptGrace g;
    g.partition = name->second;
    const auto grace = line.fields.find("GraceTime");
    const std::optional<int64_t> s =
        grace == line.fields.end() ? std::optional<int64_t>(0) : Seconds(grace->second);
    if (!s) {
      return Status::Config("partition " + g.partition + ": GraceTime '" + grace->second +
                            "' is not a number of seconds");
    }
    g.grace_time_s = *s;
    return g;
  }
  return Status::Config(partition.empty()
                            ? std::string("SLURM has no default partition (Default=YES); set "
                                          "slurm.partition")
                            : "SLURM has no partition '" + partition + "' (slurm.partition)");
}

Result<int64_t> ParseKillWait(const std::string& show_config_out) {
  size_t start = 0;
  while (start < show_config_out.size()) {
    size_t end = show_config_out.find('\n', start);
    if (end == std::string::npos) end = show_config_out.size();
    const std::string line = show_config_out.substr(start, end - start);
    start = end + 1;
    if (line.rfind("KillWait", 0) != 0) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) break;
    size_t i = eq + 1;
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
    if (const std::optional<int64_t> s = Seconds(line.substr(i, j - i))) return *s;
    return Status::Internal("scontrol show config: KillWait '" + line.substr(eq + 1) +
                            "' is not a number of seconds");
  }
  return Status::Internal("scontrol show config printed no KillWait line");
}

std::map<std::string, std::string> ParseShowConfig(const std::string& show_config_out) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < show_config_out.size()) {
    size_t end = show_config_out.find('\n', start);
    if (end == std::string::npos) end = show_config_out.size();
    const std::string line = show_config_out.substr(start, end - start);
    start = end + 1;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto trim = [](std::string s) {
      const size_t b = s.find_first_not_of(" \t");
      const size_t e = s.find_last_not_of(" \t\r");
      return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    const std::string key = trim(line.substr(0, eq));
    if (key.empty() || key.find(' ') != std::string::npos) continue;
    out.emplace(key, trim(line.substr(eq + 1)));
  }
  return out;
}

Result<std::string> SlurmClusterName(SlurmClient& slurm) {
  BATON_ASSIGN_OR_RETURN(const auto config, slurm.ShowConfig());
  const auto it = config.find("ClusterName");
  return it == config.end() || it->second == "(null)" ? std::string() : it->second;
}

}  // namespace baton
