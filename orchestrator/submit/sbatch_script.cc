#include "orchestrator/submit/sbatch_script.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <vector>

#include "orchestrator/embedded/embedded_files.h"

namespace baton {

bool SafeForSbatch(const std::string& v) {
  for (char c : v) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
          c == ',' || c == ':' || c == '+' || c == '/' || c == '[' || c == ']')) {
      return false;
    }
  }
  return true;
}

std::string MemPerCpu(const SlurmSection& s) {
  if (s.mem_per_task_gb <= 0) return "";
  // A task's memory is its CPUs' share times their count; round up so the task gets at least
  // slurm.mem_per_task_gb GiB.
  const double mib = s.mem_per_task_gb * 1024.0 / double(std::max<int64_t>(1, s.cpus_per_task));
  return std::to_string(int64_t(std::ceil(mib))) + "M";
}

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Slugify(const std::string& name) {
  std::string out;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "run" : out;
}

Result<std::string> RenderTemplate(const std::string& template_text,
                                   const std::map<std::string, std::string>& values) {
  std::istringstream in(template_text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("{{?", 0) == 0) {
      const size_t close = line.find("}}");
      if (close == std::string::npos) return Status::Internal("sbatch template: unclosed {{?");
      const std::string key = line.substr(3, close - 3);
      auto it = values.find(key);
      if (it == values.end()) return Status::Internal("sbatch template: unknown key " + key);
      if (it->second.empty()) continue;
      line = line.substr(close + 2);
    }
    std::string rendered;
    size_t pos = 0;
    while (true) {
      const size_t open = line.find("{{", pos);
      if (open == std::string::npos) {
        rendered += line.substr(pos);
        break;
      }
      const size_t close = line.find("}}", open);
      if (close == std::string::npos) return Status::Internal("sbatch template: unclosed {{");
      const std::string key = line.substr(open + 2, close - open - 2);
      auto it = values.find(key);
      if (it == values.end()) return Status::Internal("sbatch template: unknown key " + key);
      rendered += line.substr(pos, open - pos) + it->second;
      pos = close + 2;
    }
    out += rendered + "\n";
  }
  return out;
}

Status CheckSafeForSbatch(const std::string& source,
                          const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    if (!SafeForSbatch(value)) {
      return Status::Config(source + ": " + key + ": '" + value +
                            "' has characters that cannot go into an #SBATCH line (allowed: "
                            "letters, digits and _-.,:+/[])");
    }
  }
  return Status::Ok();
}

Result<std::string> RenderSbatchScript(const RunConfig& c, const SbatchParams& p) {
  const SlurmSection& s = c.slurm;
  const std::map<std::string, std::string> checked = {
      {"slurm.partition", s.partition}, {"slurm.qos", s.qos},
      {"slurm.account", s.account},     {"slurm.time", s.time},
      {"slurm.signal", Name(s.signal)}, {"run.dir", p.run_dir}};
  BATON_RETURN_IF_ERROR(CheckSafeForSbatch(c.source, checked));
  const std::map<std::string, std::string> values = {
      {"RUN_ID", p.run_id},
      {"RUN_NAME", p.run_name},
      {"JOB_NAME", "baton-" + p.run_id + "-" + Slugify(p.run_name)},
      {"RUN_DIR", p.run_dir},
      {"RUN_DIR_Q", ShellQuote(p.run_dir)},
      {"BATON_BIN_Q", ShellQuote(p.baton_bin)},
      {"SIGNAL", Name(s.signal)},
      {"SIGNAL_LEAD_S", std::to_string(s.signal_lead_s)},
      {"NODES", std::to_string(s.nodes)},
      {"NTASKS_PER_NODE", std::to_string(s.ntasks_per_node)},
      {"CPUS_PER_TASK", std::to_string(s.cpus_per_task)},
      {"TIME", s.time},
      {"PARTITION", s.partition},
      {"QOS", s.qos},
      {"ACCOUNT", s.account},
      {"GPUS_PER_NODE", s.gpus_per_node > 0 ? std::to_string(s.gpus_per_node) : ""},
      {"MEM_PER_CPU", MemPerCpu(s)},
      {"GRACE_S", p.grace_s},
      {"EXCLUDE", SafeForSbatch(p.exclude) ? p.exclude : ""},
  };
  const std::vector<EmbeddedFile>& files = SbatchTemplateFiles();
  if (files.empty()) return Status::Internal("no embedded sbatch template");
  return RenderTemplate(files[0].text, values);
}

Result<std::string> WithExcludeLine(const std::string& script, const std::string& exclude) {
  if (!SafeForSbatch(exclude)) {
    return Status::Config("excluded nodes '" + exclude +
                          "' have characters that cannot go into an #SBATCH line");
  }
  const std::string kExclude = "#SBATCH --exclude=";
  std::vector<std::string> lines;
  size_t last_sbatch = std::string::npos;
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kExclude, 0) == 0) continue;
    if (line.rfind("#SBATCH ", 0) == 0) last_sbatch = lines.size();
    lines.push_back(line);
  }
  if (last_sbatch == std::string::npos)
    return Status::Internal("the job script has no #SBATCH line");
  if (!exclude.empty()) {
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(last_sbatch) + 1, kExclude + exclude);
  }
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

}  // namespace baton
