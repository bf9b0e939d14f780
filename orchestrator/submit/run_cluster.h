// The SLURM cluster a run is recorded on, at `baton submit` and `baton resume`: slurm.cluster of
// its config when set, else the local SLURM's ClusterName (scontrol show config). baton runs the
// local SLURM commands and never routes a job to another cluster, so a slurm.cluster that the
// local SLURM contradicts is refused rather than recorded wrong (docs/run_config.md, "Cluster").
// Stateless; thread-compatible.
#pragma once

#include <string>

#include "orchestrator/slurm/slurm_client.h"
#include "schema/run_config.h"
#include "schema/status.h"

namespace baton {

// kConfig naming `where` (the config file), slurm.cluster and both names when they differ. SLURM
// unreachable: the configured name ('' when none), since sbatch will say what is wrong.
[[nodiscard]] Result<std::string> ResolveRunCluster(const SlurmSection& slurm_config,
                                                    const std::string& where, SlurmClient& slurm);

}  // namespace baton
