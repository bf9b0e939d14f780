// The `srun` command lines the launcher runs inside its job, each built here once: the training
// step, the preflight on every node, and a program on one node of a running job beside its steps.
//
// Each takes the program's argv and returns it wrapped in srun; the program's own words are never
// looked at. The options are the contract with SLURM: which job steps exist, how many tasks each
// has, and whether one task's failure ends the others. The launcher owns when each runs (with
// srun or without, launcher.h, node_checks.h, stack_capture.h). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace baton {

// `srun --kill-on-bad-exit=1 PROGRAM...`: the trainer's job step, one task per rank of the
// allocation. One rank dying takes the others down instead of leaving them hung in a collective
// until the time limit.
std::vector<std::string> SrunTrainingStep(const std::vector<std::string>& program);

// `srun --nodes=N --ntasks=N --ntasks-per-node=1 --kill-on-bad-exit=0 PROGRAM...`: one task on
// each of the allocation's `nodes` nodes; a node that fails leaves the others to finish, so every
// node reports on itself.
std::vector<std::string> SrunOncePerNode(int64_t nodes, const std::vector<std::string>& program);

// `srun --jobid J --overlap -N1 -n1 --quiet --nodelist=NODE PROGRAM...`: one task on `node` of job
// `job_id`, beside the steps already running there (--overlap). --nodelist=NODE is one word, so a
// node name is never read as an option.
std::vector<std::string> SrunOnNodeOfJob(const std::string& job_id, const std::string& node,
                                         const std::vector<std::string>& program);

}  // namespace baton
