// The preflight: what `baton preflight RUN_DIR` checks on a node before the trainer starts there
// (docs/nodes.md, "Preflight"). The launcher runs it on every node of the job (one task per
// node) before each trainer start; a node that fails writes its own incident file
// (incident_file.h, kind preflight) and the attempt ends node_unhealthy (exit 76), requeued with
// the node excluded and no crash budget spent.
//
//   gpu       nvidia-smi where there is one: uncorrected ECC errors (volatile), retired pages
//             pending, remapped-row failures. Skipped, and reported as skipped, without
//             nvidia-smi (a CPU node); a field the driver does not know is skipped, not failed.
//   writable  the run folder takes a file: create, write, fsync, remove.
//   space     the run folder's filesystem has room for the next checkpoint: the newest
//             checkpoint's size plus a quarter (kMinFreeBytes when there is none yet).
//   test_hook a node named in $BATON_PREFLIGHT_FAIL_NODES ("a,b") fails (fault injection for
//             the tests; never set in production).
// Side effects only through the filesystem and nvidia-smi; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace baton {

// Free bytes the run folder needs when it has no checkpoint yet (64 MiB).
inline constexpr int64_t kMinFreeBytes = int64_t(64) << 20;

struct PreflightCheck {
  std::string name;    // gpu | writable | space | test_hook
  std::string result;  // ok | failed | skipped
  std::string detail;
};

struct PreflightReport {
  std::string node;  // SLURMD_NODENAME, else the host name
  std::vector<PreflightCheck> checks;
  bool ok() const;
  std::string FailureText() const;  // "gpu: ...; space: ..." of the failed checks
};

// This node's name as SLURM knows it: $SLURMD_NODENAME, else gethostname().
std::string ThisNodeName();

// Bytes the next checkpoint needs: the newest checkpoint folder's size x 1.25, or kMinFreeBytes.
int64_t NextCheckpointBytes(const std::string& run_dir);

PreflightReport RunPreflight(const std::string& run_dir);

}  // namespace baton
