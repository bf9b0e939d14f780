// The srun command lines (slurm/srun_command.h), word for word: each option decides which job
// step SLURM starts and what one task's failure does to the others, so a changed word fails here
// before it changes how the launcher's steps run.
#include "orchestrator/slurm/srun_command.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace baton {
namespace {

using Argv = std::vector<std::string>;

TEST(SrunCommand, TrainingStepKillsEveryRankWhenOneDies) {
  EXPECT_EQ(SrunTrainingStep({"/opt/baton-train", "train", "--config", "/r/run.yaml"}),
            (Argv{"srun", "--kill-on-bad-exit=1", "/opt/baton-train", "train", "--config",
                  "/r/run.yaml"}));
}

TEST(SrunCommand, OncePerNodeRunsOneTaskOnEachNodeAndLetsTheOthersFinish) {
  EXPECT_EQ(SrunOncePerNode(/*nodes=*/3, {"/opt/baton", "preflight", "/r"}),
            (Argv{"srun", "--nodes=3", "--ntasks=3", "--ntasks-per-node=1", "--kill-on-bad-exit=0",
                  "/opt/baton", "preflight", "/r"}));
}

TEST(SrunCommand, OnNodeOfJobOverlapsTheJobsStepsOnThatNodeOnly) {
  EXPECT_EQ(SrunOnNodeOfJob("55", "gpu7", {"scontrol", "listpids", "55", "gpu7"}),
            (Argv{"srun", "--jobid", "55", "--overlap", "-N1", "-n1", "--quiet", "--nodelist=gpu7",
                  "scontrol", "listpids", "55", "gpu7"}));
  // An array task's id and a node name that starts like an option stay single words.
  const Argv argv = SrunOnNodeOfJob("7_3", "-x", {"true"});
  EXPECT_EQ(argv[2], "7_3");
  EXPECT_EQ(argv[7], "--nodelist=-x");
  EXPECT_EQ(argv.size(), 9u);
}

TEST(SrunCommand, TheProgramsWordsAreKeptAsTheyAre) {
  const Argv program = {"/path with space/baton-train", "--events", "a'b\"c", ""};
  const Argv argv = SrunTrainingStep(program);
  EXPECT_EQ(Argv(argv.begin() + 2, argv.end()), program);
}

}  // namespace
}  // namespace baton
