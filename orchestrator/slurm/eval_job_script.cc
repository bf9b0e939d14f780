#include "orchestrator/slurm/eval_job_script.h"

#include <algorithm>
#include <map>
#include <regex>

#include "orchestrator/embedded/embedded_files.h"
#include "orchestrator/submit/sbatch_script.h"
#include "schema/run_folder.h"

namespace baton {

EvalJobRequest EvalJobRequestOf(const RunConfig& c) {
  EvalJobRequest r;
  r.partition = c.eval.partition.empty() ? c.slurm.partition : c.eval.partition;
  r.time = c.eval.time.empty() ? c.slurm.time : c.eval.time;
  r.cpus_per_task = c.eval.cpus_per_task > 0 ? c.eval.cpus_per_task : c.slurm.cpus_per_task;
  r.cpus_per_task = std::max<int64_t>(r.cpus_per_task, 1);
  return r;
}

int64_t SlurmTimeSeconds(const std::string& t) {
  static const std::regex kForm("(?:([0-9]+)-)?([0-9]+)(?::([0-9]{1,2}))?(?::([0-9]{1,2}))?");
  std::smatch m;
  if (!std::regex_match(t, m, kForm)) return -1;
  auto num = [&](int i) { return m[i].matched ? std::stoll(m[i].str()) : 0LL; };
  const bool days = m[1].matched;
  const int parts = 1 + int(m[3].matched) + int(m[4].matched);
  // Without days: MM, MM:SS, HH:MM:SS. With days: D-HH, D-HH:MM, D-HH:MM:SS.
  if (!days) {
    if (parts == 1) return num(2) * 60;
    if (parts == 2) return num(2) * 60 + num(3);
    return num(2) * 3600 + num(3) * 60 + num(4);
  }
  return num(1) * 86400 + num(2) * 3600 + num(3) * 60 + num(4);
}

std::string EvalJobScriptPath(const std::string& run_dir, int64_t step, int64_t attempt) {
  return run_dir + "/eval_jobs/step_" + std::to_string(step) + "." + std::to_string(attempt) +
         ".sh";
}

Result<std::string> RenderEvalJobScript(const RunConfig& c, const EvalJobParams& p) {
  const EvalJobRequest req = EvalJobRequestOf(c);
  const SlurmSection& s = c.slurm;
  const std::map<std::string, std::string> checked = {
      {"eval.partition", req.partition}, {"slurm.qos", s.qos},
      {"slurm.account", s.account},      {"eval.time", req.time},
      {"slurm.signal", Name(s.signal)},  {"run.dir", p.run_dir}};
  BATON_RETURN_IF_ERROR(CheckSafeForSbatch(c.source, checked));
  // The stop counts as the time limit's once the job is within the signal's lead (and a few
  // seconds) of it; UNLIMITED never is.
  const int64_t limit_s = SlurmTimeSeconds(req.time);
  const int64_t near_limit_s =
      limit_s < 0 ? INT64_MAX / 2 : std::max<int64_t>(0, limit_s - s.signal_lead_s - 15);
  const RunFolder folder{p.run_dir};
  const std::map<std::string, std::string> values = {
      {"RUN_ID", std::to_string(p.run_id)},
      {"STEP", std::to_string(p.step)},
      {"ATTEMPT", std::to_string(p.attempt)},
      {"JOB_NAME", "baton-eval-" + std::to_string(p.run_id) + "-" + std::to_string(p.step)},
      {"RUN_DIR", p.run_dir},
      {"SIGNAL", Name(s.signal)},
      {"SIGNAL_LEAD_S", std::to_string(s.signal_lead_s)},
      {"CPUS_PER_TASK", std::to_string(req.cpus_per_task)},
      {"TIME", req.time},
      {"PARTITION", req.partition},
      {"QOS", s.qos},
      {"ACCOUNT", s.account},
      {"GPUS_PER_NODE", s.gpus_per_node > 0 ? "1" : ""},
      {"MEM_PER_CPU", MemPerCpu(s)},
      {"TRAINER_Q", ShellQuote(p.trainer_bin)},
      {"CONFIG_Q", ShellQuote(folder.RunYaml())},
      {"CHECKPOINT_Q", ShellQuote(folder.CheckpointDir(p.step))},
      {"NEAR_LIMIT_S", std::to_string(near_limit_s)},
      {"MAX_RESTARTS", std::to_string(s.max_restarts)},
  };
  const std::vector<EmbeddedFile>& files = EvalJobTemplateFiles();
  if (files.empty()) return Status::Internal("no embedded eval job template");
  return RenderTemplate(files[0].text, values);
}

}  // namespace baton
