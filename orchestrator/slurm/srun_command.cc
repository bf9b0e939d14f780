#include "orchestrator/slurm/srun_command.h"

namespace baton {

namespace {

std::vector<std::string> Wrapped(std::vector<std::string> srun,
                                 const std::vector<std::string>& program) {
  srun.insert(srun.end(), program.begin(), program.end());
  return srun;
}

}  // namespace

std::vector<std::string> SrunTrainingStep(const std::vector<std::string>& program) {
  return Wrapped({"srun", "--kill-on-bad-exit=1"}, program);
}

std::vector<std::string> SrunOncePerNode(int64_t nodes, const std::vector<std::string>& program) {
  return Wrapped({"srun", "--nodes=" + std::to_string(nodes), "--ntasks=" + std::to_string(nodes),
                  "--ntasks-per-node=1", "--kill-on-bad-exit=0"},
                 program);
}

std::vector<std::string> SrunOnNodeOfJob(const std::string& job_id, const std::string& node,
                                         const std::vector<std::string>& program) {
  return Wrapped(
      {"srun", "--jobid", job_id, "--overlap", "-N1", "-n1", "--quiet", "--nodelist=" + node},
      program);
}

}  // namespace baton
