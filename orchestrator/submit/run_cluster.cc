#include "orchestrator/submit/run_cluster.h"

namespace baton {

Result<std::string> ResolveRunCluster(const SlurmSection& slurm_config, const std::string& where,
                                      SlurmClient& slurm) {
  Result<std::string> local = SlurmClusterName(slurm);
  if (!local.ok()) {
    if (local.status().code() == Code::kUnavailable) return slurm_config.cluster;
    return local.status();
  }
  if (slurm_config.cluster.empty()) return *local;
  if (!local->empty() && *local != slurm_config.cluster) {
    return Status::Config(where + ": slurm.cluster: '" + slurm_config.cluster +
                          "', but this host's SLURM is cluster '" + *local +
                          "' (ClusterName); baton submits to the local cluster only: log in to a "
                          "host of '" +
                          slurm_config.cluster + "' or set slurm.cluster to '" + *local + "'");
  }
  return slurm_config.cluster;
}

}  // namespace baton
